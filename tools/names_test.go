package tools

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodePath(t *testing.T) {
	for in, want := range map[string]string{
		`"x\udcff"`:              "x\xff",
		`"x\uDCFF"`:              "x\xff",
		`"\udcc3("`:              "\xc3\x28",
		`"x\ufffd"`:              "x\uFFFD",
		`"x\ud83d\ude00\\\"\n"`:  "x\U0001F600\\\"\n",
		`"\ud7ff\u00e9/\udc80"`:  "\ud7ff\u00e9/\x80",
		`"plain/path.txt"`:       "plain/path.txt",
		`"\\udcff"`:              `\udcff`,
		`"d\udcfe/in\udcff.txt"`: "d\xfe/in\xff.txt",
	} {
		got, err := decodePath(json.RawMessage(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{`"x\ud800"`, `"x\udc7f"`, `"\ude00\ud83d"`, `"x\ud800\u0041"`, `1`, `{}`} {
		_, err := decodePath(json.RawMessage(in))
		assert.Error(t, err, in)
	}
}

// TestShownNamesComeBack checks that a name shown to the model, its repr's
// body put into a JSON string as it stands, is the same name again, and
// that what is shown is valid UTF-8.
func TestShownNamesComeBack(t *testing.T) {
	for _, name := range []string{"/w/x\xff", "/w/\xc3\x28", "/w/d\xfe/in\xff", "/w/s\xed\xa0\x80", `/w/a\b` + "\xff", "/w/x\uFFFD", "/w/plain.txt", "/w/über"} {
		shown := showName(name)
		require.True(t, utf8.ValidString(shown), "%q → %q", name, shown)
		body := shown
		if !plainName(name) {
			require.True(t, strings.HasPrefix(shown, "'") && strings.HasSuffix(shown, "'"), shown)
			body = shown[1 : len(shown)-1]
		}
		back, err := decodePath(json.RawMessage(`"` + body + `"`))
		require.NoError(t, err, shown)
		assert.Equal(t, name, back, "%q shown as %s", name, shown)
	}
	assert.Equal(t, "/w/plain.txt", showName("/w/plain.txt"))
	assert.Equal(t, `'/w/x\udcff'`, showName("/w/x\xff"))
	assert.Equal(t, `'/w/new\nline'`, showName("/w/new\nline"), "control characters are escaped, not drawn")
	assert.NotEqual(t, showName("/w/x\uFFFD"), showName("/w/x\xff"))
}
