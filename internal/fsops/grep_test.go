package fsops

import (
	"context"
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

// where returns "path:line" for each match.
func where(ms []GrepMatch) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s:%d", m.Path, m.Line))
	}
	return out
}

func grepTree() fstest.MapFS {
	return fstest.MapFS{
		"ws/a.go":          file("package a\n// TODO: x.*y\nfunc f() {}\n"),
		"ws/b.txt":         file("nothing here\n"),
		"ws/.hidden":       file("TODO hidden\n"),
		"ws/src/c.go":      file("one\r\nTODO (two)\r\nthree\r\n"),
		"ws/src/deep/d.go": file("TODO deep"),
		"ws/src/e.py":      file("# TODO py\n"),
		"ws/.git/f.go":     file("TODO git\n"),
		"ws/bin.dat":       file("TODO\x00 binary\n"),
		"ws/link.go":       symlink("a.go"),
		"proc/1/x.go":      file("TODO proc\n"),
		"top.go":           file("TODO top\n"),
	}
}

func TestGrep(t *testing.T) {
	fsys := grepTree()
	tests := []struct {
		name, root, pattern, glob string
		want                      []string
	}{
		{"recursive, hidden included, links skipped", "/ws", "TODO", "",
			[]string{"/ws/.git/f.go:1", "/ws/.hidden:1", "/ws/a.go:2", "/ws/src/c.go:2", "/ws/src/deep/d.go:1", "/ws/src/e.py:1"}},
		{"literal dot star", "/ws", "x.*y", "", []string{"/ws/a.go:2"}},
		{"no regex", "/ws", "T.DO", "", nil},
		{"literal paren", "/ws", "(two)", "", []string{"/ws/src/c.go:2"}},
		{"case sensitive", "/ws", "todo", "", nil},
		{"basename glob at any depth", "/ws", "TODO", "*.go",
			[]string{"/ws/.git/f.go:1", "/ws/a.go:2", "/ws/src/c.go:2", "/ws/src/deep/d.go:1"}},
		{"glob with slash is root-relative", "/ws", "TODO", "src/*.go", []string{"/ws/src/c.go:2"}},
		{"glob with **", "/ws", "TODO", "src/**/*.go", []string{"/ws/src/c.go:2", "/ws/src/deep/d.go:1"}},
		{"anchored glob", "/ws", "TODO", "/*.go", []string{"/ws/a.go:2"}},
		{"brace glob", "/ws", "TODO", "*.{py,go}",
			[]string{"/ws/.git/f.go:1", "/ws/a.go:2", "/ws/src/c.go:2", "/ws/src/deep/d.go:1", "/ws/src/e.py:1"}},
		{"single file root", "/ws/src/c.go", "TODO", "", []string{"/ws/src/c.go:2"}},
		{"single file root filtered by base name", "/ws/src/c.go", "TODO", "*.py", nil},
		{"single file root given explicitly is followed", "/ws/link.go", "TODO", "", []string{"/ws/link.go:2"}},
		{"root / skips proc", "/", "TODO", "*.go",
			[]string{"/top.go:1", "/ws/.git/f.go:1", "/ws/a.go:2", "/ws/src/c.go:2", "/ws/src/deep/d.go:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Grep(context.Background(), fsys, tt.root, tt.pattern, GrepOptions{Glob: tt.glob})
			require.NoError(t, err)
			assert.Equal(t, tt.want, where(got.Matches))
			assert.False(t, got.Truncated)
		})
	}
}

func TestGrepText(t *testing.T) {
	got, err := Grep(context.Background(), grepTree(), "/ws/src", "TODO", GrepOptions{Glob: "*.go"})
	require.NoError(t, err)
	require.Len(t, got.Matches, 2)
	assert.Equal(t, GrepMatch{Path: "/ws/src/c.go", Line: 2, Text: "TODO (two)"}, got.Matches[0], "CRLF stripped")
	assert.Equal(t, GrepMatch{Path: "/ws/src/deep/d.go", Line: 1, Text: "TODO deep"}, got.Matches[1])
}

func TestGrepMaxCount(t *testing.T) {
	fsys := fstest.MapFS{"a.txt": file("hit\nhit\nmiss\nhit\n"), "b.txt": file("hit\nhit\n")}
	ctx := context.Background()
	tests := []struct {
		max       int
		want      []string
		truncated bool
	}{
		{0, []string{"/a.txt:1", "/a.txt:2", "/a.txt:4", "/b.txt:1", "/b.txt:2"}, false},
		{3, []string{"/a.txt:1", "/a.txt:2", "/a.txt:4"}, true},
		{4, []string{"/a.txt:1", "/a.txt:2", "/a.txt:4", "/b.txt:1"}, true},
		{5, []string{"/a.txt:1", "/a.txt:2", "/a.txt:4", "/b.txt:1", "/b.txt:2"}, false},
	}
	for _, tt := range tests {
		got, err := Grep(ctx, fsys, "/", "hit", GrepOptions{MaxCount: tt.max})
		require.NoError(t, err)
		assert.Equal(t, tt.want, where(got.Matches), "max %d", tt.max)
		assert.Equal(t, tt.truncated, got.Truncated, "max %d", tt.max)
	}
	got, err := Grep(ctx, fsys, "/a.txt", "hit", GrepOptions{MaxCount: 1})
	require.NoError(t, err)
	assert.True(t, got.Truncated)
	assert.Len(t, got.Matches, 1)
}

func TestGrepBinaryAndLongLines(t *testing.T) {
	boundary := strings.Repeat("a", lineBufSize-2) + "NEEDLE" + "\n"
	longRunes := strings.Repeat("é", 40000) + "NEEDLE"
	fsys := fstest.MapFS{
		"head.bin":  file("NEEDLE\n" + "\x00"),
		"late.txt":  file("NEEDLE 1\n" + strings.Repeat("x\n", sniffBytes) + "NEEDLE 2\x00\nNEEDLE 3\n"),
		"split.txt": file(boundary),
		"runes.txt": file(longRunes + "\n"),
	}
	got, err := Grep(context.Background(), fsys, "/", "NEEDLE", GrepOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/late.txt:1", "/runes.txt:1", "/split.txt:1"}, where(got.Matches))
	runes := got.Matches[1].Text
	assert.True(t, utf8.ValidString(runes))
	assert.LessOrEqual(t, len(runes), maxGrepText)
	assert.Equal(t, maxGrepText/2*2, len(runes), "cut on a rune boundary")
	assert.Equal(t, maxGrepText, len(got.Matches[2].Text), "text capped, match across chunks found")
}

func TestGrepHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 50 MiB file")
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"big.txt": strings.Repeat("x", 50<<20) + "NEEDLE\nNEEDLE again\n"})
	var got GrepResult
	var err error
	alloc := allocatedDuring(func() {
		got, err = Grep(context.Background(), os.DirFS(dir), "/", "NEEDLE", GrepOptions{})
	})
	require.NoError(t, err)
	assert.Less(t, alloc, uint64(2<<20), "memory must stay bounded (line is 50 MiB)")
	require.Equal(t, []string{"/big.txt:1", "/big.txt:2"}, where(got.Matches))
	assert.True(t, got.Matches[0].Text == strings.Repeat("x", maxGrepText), "text is the first 64 KiB")
	assert.Equal(t, "NEEDLE again", got.Matches[1].Text)
}

func TestGrepErrors(t *testing.T) {
	fsys := grepTree()
	ctx := context.Background()
	_, err := Grep(ctx, fsys, "/missing", "x", GrepOptions{})
	requirePathErr(t, err, "/missing", fs.ErrNotExist)
	_, err = Grep(ctx, fsys, "/ws", "", GrepOptions{})
	requirePathErr(t, err, "/ws", ErrInvalidPattern)
	_, err = Grep(ctx, fsys, "/ws", "x", GrepOptions{Glob: "../*.go"})
	requirePathErr(t, err, "/ws", ErrInvalidPattern)
	_, err = Grep(ctx, fsys, "/ws", "x", GrepOptions{Glob: strings.Repeat("{a,b}", 11)})
	requirePathErr(t, err, "/ws", ErrPatternTooBroad)
	_, err = Grep(ctx, fsys, "ws", "x", GrepOptions{})
	requirePathErr(t, err, "ws", ErrInvalidPath)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Grep(cancelled, fsys, "/ws", "TODO", GrepOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestGrepOS(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"ws/a.txt":        "hit a\n",
		"ws/sub/b.txt":    "hit b\n",
		"ws/locked/c.txt": "hit c\n",
		"ws/secret.txt":   "hit secret\n",
	})
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.Symlink("a.txt", filepath.Join(ws, "filelink.txt")))
	require.NoError(t, os.Symlink("sub", filepath.Join(ws, "dirlink")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo.txt"), 0o644))
	fsys := os.DirFS(dir)

	var got GrepResult
	var err error
	withTimeout(t, 5*time.Second, func() {
		got, err = Grep(context.Background(), fsys, "/ws", "hit", GrepOptions{})
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"/ws/a.txt:1", "/ws/locked/c.txt:1", "/ws/secret.txt:1", "/ws/sub/b.txt:1"}, where(got.Matches))

	_, err = Grep(context.Background(), fsys, "/ws/fifo.txt", "hit", GrepOptions{})
	requirePathErr(t, err, "/ws/fifo.txt", ErrNotRegular)

	if !isRoot() {
		require.NoError(t, os.Chmod(filepath.Join(ws, "secret.txt"), 0))
		locked := filepath.Join(ws, "locked")
		require.NoError(t, os.Chmod(locked, 0))
		t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
		got, err = Grep(context.Background(), fsys, "/ws", "hit", GrepOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"/ws/a.txt:1", "/ws/sub/b.txt:1"}, where(got.Matches))
	}
}

func TestLineSearcherChunkBoundaries(t *testing.T) {
	line := "xxNEEDLEyy"
	for _, pat := range []string{"NEEDLE", "N", "xxNEEDLEyy", "EDLEy"} {
		for i := 0; i <= len(line); i++ {
			for j := i; j <= len(line); j++ {
				s := lineSearcher{pat: []byte(pat)}
				for _, c := range []string{line[:i], line[i:j], line[j:]} {
					s.feed([]byte(c))
				}
				assert.True(t, s.found, "%q split at %d,%d", pat, i, j)
				assert.Equal(t, line, string(s.text))
			}
		}
	}
	s := lineSearcher{pat: []byte("NEEDLE")}
	s.feed([]byte("NEED"))
	s.feed([]byte("xLE"))
	assert.False(t, s.found)
}
