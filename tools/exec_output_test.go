package tools

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collect writes s to a collector of budget bytes in chunks of size n.
func collect(s string, budget, n int) *headTail {
	h := newHeadTail(budget)
	for len(s) > 0 {
		k := min(n, len(s))
		h.Write([]byte(s[:k]))
		s = s[k:]
	}
	return h
}

// Output within the budget reaches the model whole (escaped); over it,
// Codex's shape: "Total output lines: N", a blank line, head, "…N tokens
// truncated…", tail.
func TestHeadTailCodexShape(t *testing.T) {
	text, cut := collect("hello\nworld\n", 100, 3).text()
	assert.False(t, cut)
	assert.Equal(t, "hello\nworld\n", text)

	text, cut = collect("", 100, 3).text()
	assert.False(t, cut)
	assert.Equal(t, "", text)

	// 40 bytes, budget 16: head 8, tail 8, 24 bytes (6 tokens) removed.
	s := "0123456789abcdefghijklmnopqrstuvwxyzABCD"
	for _, chunk := range []int{1, 5, 40} {
		text, cut = collect(s, 16, chunk).text()
		assert.True(t, cut)
		assert.Equal(t, "Total output lines: 1\n\n01234567…6 tokens truncated…wxyzABCD", text, "chunks of %d", chunk)
	}

	// Lines: a last line without "\n" counts, as in Rust's lines().
	text, _ = collect(strings.Repeat("line\n", 1000), 20, 7).text()
	assert.True(t, strings.HasPrefix(text, "Total output lines: 1000\n\n"), text)
	text, _ = collect(strings.Repeat("line\n", 1000)+"end", 20, 7).text()
	assert.True(t, strings.HasPrefix(text, "Total output lines: 1001\n\n"), text)
	assert.True(t, strings.HasSuffix(text, "ine\nend"), text)

	// Budget 0: only the marker.
	text, cut = collect("abcdefgh", 0, 3).text()
	assert.True(t, cut)
	assert.Equal(t, "Total output lines: 1\n\n…2 tokens truncated…", text)
}

// Whatever the output (control bytes, invalid UTF-8, multibyte characters
// cut anywhere), the model's text is valid UTF-8 with no control character
// but "\n", "\t" and CRLF's "\r", and head and tail fit in the budget; the
// collector's memory stays within a few times the budget however much
// went through.
func TestHeadTailBoundedAndSafe(t *testing.T) {
	marker := regexp.MustCompile(`…[0-9]+ tokens truncated…`)
	for name, raw := range hostileOutputs(5000) {
		for _, budget := range []int{0, 1, 7, 64, 1000, 20000} {
			for _, chunk := range []int{1, 3, 4096} {
				t.Run(fmt.Sprintf("%s/%d/%d", name, budget, chunk), func(t *testing.T) {
					h := collect(raw, budget, chunk)
					assert.LessOrEqual(t, len(h.head)+len(h.tail), 3*budget+64, "memory")
					assert.EqualValues(t, len(raw), h.total)
					text, cut := h.text()
					require.True(t, utf8.ValidString(text))
					assert.Equal(t, text, sandbox.SafeText(text), "escaped")
					if !cut {
						assert.Equal(t, sandbox.SafeText(raw), text)
						assert.LessOrEqual(t, len(text), budget)
						return
					}
					_, body, ok := strings.Cut(text, "\n\n")
					require.True(t, ok, text)
					loc := marker.FindStringIndex(body)
					require.NotNil(t, loc, text)
					assert.LessOrEqual(t, len(body)-(loc[1]-loc[0]), budget, "head and tail within the budget")
					esc := sandbox.SafeText(raw)
					assert.True(t, strings.HasPrefix(esc, body[:loc[0]]), "the head starts the output")
				})
			}
		}
	}
}

// A stream of any size goes through a small collector in bounded memory.
func TestHeadTailLargeStream(t *testing.T) {
	h := newHeadTail(4000)
	chunk := []byte(strings.Repeat("x", 1000) + "\n")
	for range 100000 { // 100 MB
		h.Write(chunk)
	}
	assert.LessOrEqual(t, cap(h.head)+cap(h.tail), 4*4000+64)
	text, cut := h.text()
	assert.True(t, cut)
	assert.True(t, strings.HasPrefix(text, "Total output lines: 100000\n\n"), text[:40])
	assert.Less(t, len(text), 4100)
	assert.Contains(t, text, "tokens truncated…")
}

func TestExecReportFormat(t *testing.T) {
	out := collect("hi\n", 100, 10)
	got := execReport{wall: 1.00236, running: true, sessionID: 1000, out: out}.String()
	assert.Regexp(t, `^Chunk ID: [0-9a-f]{6}\nWall time: 1\.0024 seconds\nProcess running with session ID 1000\nOriginal token count: 1\nOutput:\nhi\n$`, got)
	got = execReport{wall: 0, exitCode: 3, dropped: 10, out: out}.String()
	assert.Regexp(t, `^Chunk ID: [0-9a-f]{6}\nWall time: 0\.0000 seconds\nProcess exited with code 3\nOriginal token count: 4\nOutput:\n\.\.\. 10 bytes omitted \.\.\.\nhi\n$`, got)
}
