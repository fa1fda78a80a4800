package sandbox_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
)

// TestMain readies the test daemon and images for the runnable Examples,
// which run against it. The black-box tests of the package are in
// integration/.
func TestMain(m *testing.M) { testenv.Main(m) }

func TestSafeText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain text, ünïcödé ✓ 文字\n\ttabbed\n", "plain text, ünïcödé ✓ 文字\n\ttabbed\n"},
		{"crlf\r\nline\r\n", "crlf\r\nline\r\n"},
		{"10%\r50%\r100%\n", "10%␍50%␍100%\n"},
		{"ends in cr\r", "ends in cr␍"},
		{"nul\x00byte", "nul␀byte"},
		{"\x1b[31mred\x1b[0m", "␛[31mred␛[0m"},
		{"\x1b]0;title\x07", "␛]0;title␇"},
		{"bell\a back\b form\f vt\v", "bell␇ back␈ form␌ vt␋"},
		{"\x01\x1f\x7f", "␁␟␡"},
		{"csi\u009b31m nel\u0085", `csi\u009b31m nel\u0085`},
		{"bad \xff\xfe utf-8 \xe2\x82", "bad \uFFFD\uFFFD utf-8 \uFFFD\uFFFD"},
		{"\u00a0nbsp and é stay", "\u00a0nbsp and é stay"},
	} {
		got := sandbox.SafeText(c.in)
		assert.Equal(t, c.want, got, "SafeText(%q)", c.in)
		assert.True(t, utf8.ValidString(got))
		assert.Equal(t, got, sandbox.SafeText(got), "idempotent on %q", c.in)
	}

	// Every byte value: nothing a terminal acts on survives.
	var all strings.Builder
	for b := 0; b < 256; b++ {
		all.WriteByte(byte(b))
	}
	for r := rune(0x80); r <= 0x9f; r++ {
		all.WriteRune(r)
	}
	got := sandbox.SafeText(all.String())
	assert.True(t, utf8.ValidString(got))
	for _, r := range got {
		terminalControl := r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
		assert.False(t, terminalControl, "%U left in the output", r)
	}
	assert.NotContains(t, got, "\r")
}

func TestSafeTextNoCopy(t *testing.T) {
	s := strings.Repeat("clean text\r\n", 1000)
	allocs := testing.AllocsPerRun(10, func() { _ = sandbox.SafeText(s) })
	assert.Zero(t, allocs)
}
