package fsops

import (
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collectLines reads every line of s, returning the lines and the chunks seen.
func collectLines(t *testing.T, s string, universal, oneByte bool) (lines []string, chunks [][]byte) {
	t.Helper()
	r := strings.NewReader(s)
	lr := newLineReader(r, universal)
	if oneByte {
		lr = newLineReader(iotest.OneByteReader(r), universal)
	}
	for {
		var sb strings.Builder
		calls := 0
		ok, err := lr.readLine(func(c []byte) bool {
			calls++
			chunks = append(chunks, append([]byte(nil), c...))
			sb.Write(c)
			return true
		})
		require.NoError(t, err)
		if !ok {
			require.Zero(t, calls)
			return lines, chunks
		}
		require.Positive(t, calls, "emit must be called for every line")
		lines = append(lines, sb.String())
	}
}

func TestLineReaderSplitting(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		universal []string
		lf        []string
	}{
		{"empty", "", nil, nil},
		{"no terminator", "abc", []string{"abc"}, []string{"abc"}},
		{"lf", "a\nb\n", []string{"a", "b"}, []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, []string{"a", "b"}},
		{"lone cr", "a\rb\rc", []string{"a", "b", "c"}, []string{"a\rb\rc"}},
		{"cr cr lf", "a\r\r\nb", []string{"a", "", "b"}, []string{"a\r", "b"}},
		{"blank lines", "\n\n", []string{"", ""}, []string{"", ""}},
		{"trailing cr", "a\r", []string{"a"}, []string{"a\r"}},
		{"lf cr", "a\n\rb", []string{"a", "", "b"}, []string{"a", "\rb"}},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			got, _ := collectLines(t, tt.in, true, oneByte)
			assert.Equal(t, tt.universal, got, "%s universal", tt.name)
			got, _ = collectLines(t, tt.in, false, oneByte)
			assert.Equal(t, tt.lf, got, "%s lf-only", tt.name)
		}
	}
}

func TestLineReaderWindowBoundaries(t *testing.T) {
	a := strings.Repeat("a", lineBufSize-1)
	// "\r\n" split exactly across two read windows.
	in := a + "\r\nnext"
	for _, universal := range []bool{true, false} {
		got, _ := collectLines(t, in, universal, false)
		assert.Equal(t, []string{a, "next"}, got)
	}
	// A lone "\r" at the end of a window.
	got, _ := collectLines(t, a+"\rnext", true, false)
	assert.Equal(t, []string{a, "next"}, got)

	// Multi-byte runes straddling window boundaries are never split.
	long := strings.Repeat("é", lineBufSize) + "\n" + strings.Repeat("😀", lineBufSize)
	lines, chunks := collectLines(t, long, true, false)
	require.Len(t, lines, 2)
	assert.Equal(t, strings.Repeat("é", lineBufSize), lines[0])
	assert.Equal(t, strings.Repeat("😀", lineBufSize), lines[1])
	require.Greater(t, len(chunks), 4)
	for _, c := range chunks {
		assert.LessOrEqual(t, len(c), lineBufSize)
		assert.True(t, utf8.Valid(c), "chunk splits a rune")
	}
}

func TestLineReaderStopAndCount(t *testing.T) {
	lr := newLineReader(strings.NewReader("one\ntwo\nthree\n"), true)
	ok, err := lr.readLine(func([]byte) bool { return true })
	require.True(t, ok)
	require.NoError(t, err)
	more, err := lr.more()
	require.NoError(t, err)
	assert.True(t, more)
	n, err := lr.countLines()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	more, err = lr.more()
	require.NoError(t, err)
	assert.False(t, more)

	calls := 0
	lr = newLineReader(strings.NewReader(strings.Repeat("x", 3*lineBufSize)), true)
	ok, err = lr.readLine(func([]byte) bool { calls++; return false })
	assert.True(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, 1, calls, "emit returning false stops at once")
}

func TestUTF8Helpers(t *testing.T) {
	assert.Equal(t, 0, partialRuneLen([]byte("abc")))
	assert.Equal(t, 0, partialRuneLen([]byte("aé")))
	assert.Equal(t, 1, partialRuneLen([]byte("a\xc3")))
	assert.Equal(t, 2, partialRuneLen([]byte("a\xe2\x82")))
	assert.Equal(t, 3, partialRuneLen([]byte("a\xf0\x9f\x98")))
	assert.Equal(t, 0, partialRuneLen([]byte("a\xff")), "invalid byte is not a partial rune")
	assert.Equal(t, 0, partialRuneLen(nil))

	b := []byte("ab€cd") // € is 3 bytes at 2..4
	assert.Equal(t, 2, cutUTF8(b, 2))
	assert.Equal(t, 2, cutUTF8(b, 3))
	assert.Equal(t, 2, cutUTF8(b, 4))
	assert.Equal(t, 5, cutUTF8(b, 5))
	assert.Equal(t, len(b), cutUTF8(b, 100))
	assert.Equal(t, 0, cutUTF8(b, -1))

	assert.True(t, validUTF8Prefix([]byte("plain \x00 text é")))
	assert.True(t, validUTF8Prefix([]byte("cut é\xe2\x82")), "trailing partial rune tolerated")
	assert.False(t, validUTF8Prefix([]byte("bad \xff here")))
	assert.False(t, validUTF8Prefix([]byte("\xe2\x82x")), "partial rune in the middle")
	assert.False(t, validUTF8Prefix([]byte("\xe0\x80")), "invalid prefix at the end")
	assert.False(t, validUTF8Prefix([]byte("\xed\xa0\x80")), "surrogate")
}
