package tools

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The preview and the message are deepagents 0.7.8's, byte for byte: its
// own functions made testdata/eviction.json (testdata/eviction_gen.py).
func TestEvictionAsDeepagents(t *testing.T) {
	b, err := os.ReadFile("testdata/eviction.json")
	require.NoError(t, err)
	var cases map[string]struct{ Input, Preview, Message string }
	require.NoError(t, json.Unmarshal(b, &cases))
	require.NotEmpty(t, cases)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := preview(c.Input)
			assert.Equal(t, c.Preview, p)
			assert.Equal(t, c.Message, tooLargeMessage("call.1/x", "/large_tool_results/"+sanitizeCallID("call.1/x"), p))
		})
	}
}

// The capture preview is execute_with_offload's head -c | head -n, marker,
// tail -c | tail -n; with ten lines or fewer, head -c 4000.
func TestCapturePreview(t *testing.T) {
	var out []byte
	for i := range 1000 {
		out = append(out, []byte(string(rune('a'+i%26))+"23456789\n")...)
	}
	s := string(out)
	assert.Equal(t, "a23456789\nb23456789\nc23456789\nd23456789\ne23456789\n... [990 lines truncated] ...\nh23456789\ni23456789\nj23456789\nk23456789\nl23456789\n",
		capturePreview(s, out[len(out)-4096:], 1000))
	// Lines longer than the 2,000 bytes: the cut falls inside them.
	long := make([]byte, 0, 30000)
	for range 12 {
		long = append(long, make([]byte, 2500)...)
		long = append(long, '\n')
	}
	for i := range long {
		if long[i] == 0 {
			long[i] = 'x'
		}
	}
	p := capturePreview(string(long), long[len(long)-4096:], 12)
	assert.Equal(t, string(long[:2000])+"... [2 lines truncated] ...\n"+string(long[len(long)-2000:]), p)
	// Few lines: the first 4,000 bytes, no marker, a character never cut.
	few := string(repeat('y', 3999)) + "é" + string(repeat('y', 1000))
	assert.Len(t, capturePreview(few, nil, 0), 3999)
	few = "é" + string(repeat('y', 5000))
	assert.Len(t, capturePreview(few, nil, 10), 4000)
	// tail -n counts a last line without a newline.
	assert.Equal(t, "3\n4\n5\n6\n7", lastLines("1\n2\n3\n4\n5\n6\n7", 5))
	assert.Equal(t, "3\n4\n5\n6\n7\n", lastLines("1\n2\n3\n4\n5\n6\n7\n", 5))
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// Python's str.splitlines.
func TestSplitLines(t *testing.T) {
	assert.Nil(t, splitLines(""))
	assert.Equal(t, []string{"a"}, splitLines("a\n"))
	assert.Equal(t, []string{"a", ""}, splitLines("a\n\n"))
	assert.Equal(t, []string{"a", "b", "c"}, splitLines("a\r\nb\rc"))
	assert.Equal(t, []string{"a", "b", "c", "d"}, splitLines("a\u2028b\u2029c\u0085d"))
}
