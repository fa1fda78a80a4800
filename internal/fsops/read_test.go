package fsops

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadPages(t *testing.T) {
	fsys := fstest.MapFS{
		"w/abc.txt":    file("a\nb\nc"),
		"w/abcnl.txt":  file("a\nb\nc\n"),
		"w/crlf.txt":   file("one\r\ntwo\r\nthree\r\n"),
		"w/cr.txt":     file("one\rtwo\rthree"),
		"w/mixed.txt":  file("a\r\r\nb\n\rc"),
		"w/blank.txt":  file("\n"),
		"w/blanks.txt": file("\n\n"),
		"w/nul.txt":    file("x\x00y\nz"),
	}
	type want struct {
		content                 string
		total, start, end, next int
	}
	tests := []struct {
		name          string
		file          string
		offset, limit int
		want          want
	}{
		{"whole", "abc.txt", 0, 2000, want{"a\nb\nc", 3, 1, 3, -1}},
		{"trailing newline", "abcnl.txt", 0, 2000, want{"a\nb\nc", 3, 1, 3, -1}},
		{"first page", "abc.txt", 0, 2, want{"a\nb", 3, 1, 2, 2}},
		{"middle", "abc.txt", 1, 1, want{"b", 3, 2, 2, 2}},
		{"last line", "abc.txt", 2, 5, want{"c", 3, 3, 3, -1}},
		{"exact end", "abc.txt", 1, 2, want{"b\nc", 3, 2, 3, -1}},
		{"negative offset", "abc.txt", -5, 1, want{"a", 3, 1, 1, 1}},
		{"crlf", "crlf.txt", 0, 10, want{"one\ntwo\nthree", 3, 1, 3, -1}},
		{"lone cr", "cr.txt", 1, 10, want{"two\nthree", 3, 2, 3, -1}},
		{"mixed endings", "mixed.txt", 0, 10, want{"a\n\nb\n\nc", 5, 1, 5, -1}},
		{"single blank line", "blank.txt", 0, 10, want{"", 1, 1, 1, -1}},
		{"second blank line", "blanks.txt", 1, 10, want{"", 2, 2, 2, -1}},
		{"nul is text", "nul.txt", 0, 10, want{"x\x00y\nz", 2, 1, 2, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(fsys, "/w/"+tt.file, tt.offset, tt.limit)
			require.NoError(t, err)
			assert.Equal(t, ReadResult{
				Content: tt.want.content, Encoding: "utf-8", TotalLines: tt.want.total,
				StartLine: tt.want.start, EndLine: tt.want.end, NextOffset: tt.want.next,
			}, got)
		})
	}
}

func TestReadOffsetErrors(t *testing.T) {
	fsys := fstest.MapFS{"abc.txt": file("a\nb\nc\n"), "one.txt": file("x")}
	tests := []struct {
		name   string
		file   string
		offset int
		msg    string
	}{
		{"offset equals lines", "/abc.txt", 3, "Line offset 3 exceeds file length (3 lines)"},
		{"offset beyond", "/abc.txt", 7, "Line offset 7 exceeds file length (3 lines)"},
		{"single line", "/one.txt", 1, "Line offset 1 exceeds file length (1 lines)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(fsys, tt.file, tt.offset, 10)
			pe := requirePathErr(t, err, tt.file, ErrOffsetOutOfRange)
			assert.Equal(t, tt.msg, pe.Err.Error())
			assert.Equal(t, "read "+tt.file+": "+tt.msg, err.Error())
		})
	}
}

func TestReadSpecialResults(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00binary"
	fsys := fstest.MapFS{
		"empty.txt":   file(""),
		"abc.txt":     file("a\nb\nc"),
		"img.PNG":     file(png),
		"clip.mkv":    file("plain text but a video"),
		"doc.pdf":     file(strings.Repeat("x", MaxBinaryBytes)),
		"big.mp4":     file(strings.Repeat("x", MaxBinaryBytes+1)),
		"blob.bin":    file("\xff\xfe\x00\x01"),
		"bigblob.bin": file("\xff" + strings.Repeat("x", MaxBinaryBytes)),
		"late.bin":    file(strings.Repeat("a", sniffBytes) + "\xff"),
		"split.txt":   file(strings.Repeat("a", sniffBytes-1) + "é tail"),
		"badend.bin":  file(strings.Repeat("a", sniffBytes-1) + "\xff"),
	}
	t.Run("empty file reminder wins over limit 0", func(t *testing.T) {
		for _, limit := range []int{0, 10, -1} {
			got, err := Read(fsys, "/empty.txt", 5, limit)
			require.NoError(t, err)
			assert.Equal(t, ReadResult{
				Content: "System reminder: File exists but has empty contents", Encoding: "utf-8", NextOffset: -1,
			}, got)
		}
	})
	t.Run("limit 0 reads nothing", func(t *testing.T) {
		for _, offset := range []int{0, 99, -3} {
			for _, limit := range []int{0, -4} {
				got, err := Read(fsys, "/abc.txt", offset, limit)
				require.NoError(t, err)
				assert.Equal(t, ReadResult{Encoding: "utf-8", TotalLines: -1, NextOffset: -1, NoLinesRequested: true}, got)
			}
		}
	})
	base64Of := func(s string) ReadResult {
		return ReadResult{Content: base64.StdEncoding.EncodeToString([]byte(s)), Encoding: "base64", TotalLines: -1, NextOffset: -1}
	}
	for name, content := range map[string]string{
		"/img.PNG":    png,
		"/clip.mkv":   "plain text but a video",
		"/doc.pdf":    strings.Repeat("x", MaxBinaryBytes),
		"/blob.bin":   "\xff\xfe\x00\x01",
		"/badend.bin": strings.Repeat("a", sniffBytes-1) + "\xff",
	} {
		t.Run("base64 "+name, func(t *testing.T) {
			got, err := Read(fsys, name, 3, 0) // offset and limit do not apply
			require.NoError(t, err)
			assert.Equal(t, base64Of(content), got)
		})
	}
	for _, name := range []string{"/big.mp4", "/bigblob.bin"} {
		t.Run("too large "+name, func(t *testing.T) {
			_, err := Read(fsys, name, 0, 10)
			pe := requirePathErr(t, err, name, ErrBinaryTooLarge)
			assert.Equal(t, "Binary file exceeds maximum preview size of 512000 bytes", pe.Err.Error())
		})
	}
	t.Run("only the first 8192 bytes are sniffed", func(t *testing.T) {
		got, err := Read(fsys, "/late.bin", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, "utf-8", got.Encoding)
		got, err = Read(fsys, "/split.txt", 0, 10)
		require.NoError(t, err)
		assert.Equal(t, "utf-8", got.Encoding, "a rune cut by the sniff window is tolerated")
		assert.True(t, strings.HasSuffix(got.Content, "é tail"))
	})
}

func TestReadPathErrors(t *testing.T) {
	fsys := fstest.MapFS{"d/f.txt": file("x")}
	_, err := Read(fsys, "/d", 0, 10)
	requirePathErr(t, err, "/d", ErrIsDir)
	assert.ErrorIs(t, err, ErrNotRegular)
	assert.Equal(t, "read /d: is a directory", err.Error())
	_, err = Read(fsys, "/", 0, 10)
	requirePathErr(t, err, "/", ErrIsDir)
	_, err = Read(fsys, "/d/missing", 0, 10)
	requirePathErr(t, err, "/d/missing", fs.ErrNotExist)
	_, err = Read(fsys, "d/f.txt", 0, 10)
	requirePathErr(t, err, "d/f.txt", ErrInvalidPath)
	_, err = Read(fsys, "", 0, 10)
	requirePathErr(t, err, "", ErrInvalidPath)
}

func TestReadByteBudget(t *testing.T) {
	budget := MaxPageBytes - len(truncationMsg)
	line := strings.Repeat("x", 100000)
	fsys := fstest.MapFS{
		// 8 lines × 100 000 bytes: lines 1-5 fit, line 6 overflows.
		"eight.txt": file(strings.Repeat(line+"\n", 8)),
		// First line exactly fills the budget; the separator overflows.
		"exact.txt": file(strings.Repeat("y", budget) + "\nsecond\n"),
		// A single line over the budget made of 2-byte runes.
		"runes.txt": file(strings.Repeat("é", 300000) + "\nnext"),
	}
	t.Run("overflowing later line", func(t *testing.T) {
		got, err := Read(fsys, "/eight.txt", 0, 100)
		require.NoError(t, err)
		assert.True(t, got.Truncated)
		assert.Len(t, got.Content, MaxPageBytes)
		assert.True(t, strings.HasSuffix(got.Content, truncationMsg))
		assert.Equal(t, strings.Repeat(line+"\n", 5), got.Content[:5*100001])
		assert.Equal(t, []int{1, 5, 5, 8}, []int{got.StartLine, got.EndLine, got.NextOffset, got.TotalLines})

		got, err = Read(fsys, "/eight.txt", 5, 100) // continue where told
		require.NoError(t, err)
		assert.Equal(t, []int{6, 8, -1, 8}, []int{got.StartLine, got.EndLine, got.NextOffset, got.TotalLines})
		assert.False(t, got.Truncated)
	})
	t.Run("separator overflow", func(t *testing.T) {
		got, err := Read(fsys, "/exact.txt", 0, 10)
		require.NoError(t, err)
		assert.True(t, got.Truncated)
		assert.Equal(t, strings.Repeat("y", budget)+truncationMsg, got.Content)
		assert.Equal(t, []int{1, 1, 1, 2}, []int{got.StartLine, got.EndLine, got.NextOffset, got.TotalLines})
		got, err = Read(fsys, "/exact.txt", 0, 1) // limit reached first: not truncated
		require.NoError(t, err)
		assert.False(t, got.Truncated)
		assert.Len(t, got.Content, budget)
	})
	t.Run("first line overflows on a rune boundary", func(t *testing.T) {
		got, err := Read(fsys, "/runes.txt", 0, 10)
		require.NoError(t, err)
		assert.True(t, got.Truncated)
		body := strings.TrimSuffix(got.Content, truncationMsg)
		assert.True(t, utf8.ValidString(body))
		assert.Equal(t, budget/2*2, len(body))
		assert.LessOrEqual(t, len(got.Content), MaxPageBytes)
		assert.Equal(t, []int{1, 1, 1, 2}, []int{got.StartLine, got.EndLine, got.NextOffset, got.TotalLines})
		got, err = Read(fsys, "/runes.txt", 1, 10)
		require.NoError(t, err)
		assert.Equal(t, "next", got.Content)
	})
}

func TestReadTotalLinesLargeFile(t *testing.T) {
	var sb strings.Builder
	for sb.Len() <= 1<<20 {
		sb.WriteString("a line of text that is not very long\n")
	}
	content := sb.String()
	lines := strings.Count(content, "\n")
	fsys := fstest.MapFS{
		"big.txt":   file(content),
		"small.txt": file(content[:1<<19]),
	}
	got, err := Read(fsys, "/big.txt", 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []int{-1, 1, 10, 10}, []int{got.TotalLines, got.StartLine, got.EndLine, got.NextOffset})

	got, err = Read(fsys, "/big.txt", lines-10, 10) // this page reaches EOF
	require.NoError(t, err)
	assert.Equal(t, []int{lines, lines - 9, lines, -1}, []int{got.TotalLines, got.StartLine, got.EndLine, got.NextOffset})

	got, err = Read(fsys, "/small.txt", 0, 10) // ≤ 1 MiB: counted
	require.NoError(t, err)
	assert.Equal(t, strings.Count(content[:1<<19], "\n")+1, got.TotalLines)
	assert.Equal(t, 10, got.NextOffset)
}

func TestReadHugeSingleLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 50 MiB file")
	}
	dir := t.TempDir()
	const size = 50 << 20
	huge := strings.Repeat("€", size/3) // 3-byte runes: the cut must respect them
	writeTree(t, dir, map[string]string{
		"one.txt": huge,
		"two.txt": huge + "\nsecond line\n",
	})
	fsys := os.DirFS(dir)

	var got ReadResult
	var err error
	alloc := allocatedDuring(func() { got, err = Read(fsys, "/one.txt", 0, 100) })
	require.NoError(t, err)
	assert.Less(t, alloc, uint64(8*MaxPageBytes), "memory must stay bounded (file is 50 MiB)")
	assert.True(t, got.Truncated)
	assert.LessOrEqual(t, len(got.Content), MaxPageBytes)
	assert.True(t, strings.HasSuffix(got.Content, truncationMsg))
	assert.True(t, utf8.ValidString(got.Content))
	assert.Equal(t, []int{1, 1, 1, -1}, []int{got.TotalLines, got.StartLine, got.EndLine, got.NextOffset})

	got, err = Read(fsys, "/two.txt", 0, 100)
	require.NoError(t, err)
	assert.True(t, got.Truncated)
	assert.Equal(t, []int{-1, 1, 1, 1}, []int{got.TotalLines, got.StartLine, got.EndLine, got.NextOffset})

	got, err = Read(fsys, "/two.txt", 1, 100)
	require.NoError(t, err)
	assert.Equal(t, "second line", got.Content)
	assert.Equal(t, []int{2, 2, 2, -1}, []int{got.TotalLines, got.StartLine, got.EndLine, got.NextOffset})
}

func TestReadOSFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"w/a.txt": "hello\nworld\n"})
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "w/link.txt")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "w/fifo"), 0o644))
	fsys := os.DirFS(dir)

	got, err := Read(fsys, "/w/link.txt", 1, 10)
	require.NoError(t, err)
	assert.Equal(t, "world", got.Content)

	withTimeout(t, 5*time.Second, func() {
		_, err = Read(fsys, "/w/fifo", 0, 10)
	})
	requirePathErr(t, err, "/w/fifo", ErrNotRegular)

	_, err = Read(fsys, "/w/missing", 0, 10)
	requirePathErr(t, err, "/w/missing", fs.ErrNotExist)
	_, err = Read(fsys, "/w/a.txt/x", 0, 10)
	requirePathErr(t, err, "/w/a.txt/x", syscall.ENOTDIR)

	if !isRoot() {
		require.NoError(t, os.Chmod(filepath.Join(dir, "w/a.txt"), 0))
		_, err = Read(fsys, "/w/a.txt", 0, 10)
		requirePathErr(t, err, "/w/a.txt", fs.ErrPermission)
	}
}

// refLines splits s like Python's universal newlines.
func refLines(s string) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("a\nb\r\nc\rd"), 1, 2)
	f.Add([]byte(""), 0, 10)
	f.Add([]byte("\xff\xfe"), 0, 1)
	f.Add([]byte("x\n\n"), 2, 1)
	f.Add([]byte("é"), -1, -1)
	f.Fuzz(func(t *testing.T, content []byte, offset, limit int) {
		fsys := fstest.MapFS{"f.txt": file(string(content))}
		got, err := Read(fsys, "/f.txt", offset, limit)
		offset, limit = max(offset, 0), max(limit, 0)
		head := content[:min(len(content), sniffBytes)]
		switch {
		case len(content) == 0:
			require.NoError(t, err)
			require.Equal(t, emptyFileReminder, got.Content)
		case !validUTF8Prefix(head):
			require.NoError(t, err)
			require.Equal(t, "base64", got.Encoding)
			require.Equal(t, base64.StdEncoding.EncodeToString(content), got.Content)
		case limit == 0:
			require.NoError(t, err)
			require.True(t, got.NoLinesRequested)
		default:
			lines := refLines(string(content))
			if offset >= len(lines) {
				require.ErrorIs(t, err, ErrOffsetOutOfRange)
				require.Equal(t, fmt.Sprintf("read /f.txt: Line offset %d exceeds file length (%d lines)", offset, len(lines)), err.Error())
				return
			}
			require.NoError(t, err)
			require.LessOrEqual(t, len(got.Content), MaxPageBytes)
			end := offset + min(limit, len(lines)-offset)
			next := -1
			if end < len(lines) {
				next = end
			}
			require.Equal(t, ReadResult{
				Content: strings.Join(lines[offset:end], "\n"), Encoding: "utf-8", TotalLines: len(lines),
				StartLine: offset + 1, EndLine: end, NextOffset: next,
			}, got)
		}
	})
}
