package fsops

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func globTree() fstest.MapFS {
	return fstest.MapFS{
		"ws/a.py":              file("a"),
		"ws/README.md":         file("r"),
		"ws/.env":              file("e"),
		"ws/src/b.py":          file("bb"),
		"ws/src/c.go":          file("c"),
		"ws/src/deep/d.py":     file("d"),
		"ws/src/.hidden.py":    file("h"),
		"ws/.git/objects/x.py": file("x"),
		"ws/.git/config":       file("c"),
		"ws/a-b/z.py":          file("z"),
		"ws/emptydir":          {Mode: fs.ModeDir | 0o755},
		"ws/dir.py/inside.txt": file("i"),
		"ws/links/ok.py":       symlink("../src/b.py"),
		"ws/links/abs.py":      symlink("/ws/src/c.go"),
		"ws/links/out.py":      symlink("../../outside.py"),
		"ws/links/broken.py":   symlink("nothere.py"),
		"ws/links/dirlink":     symlink("../src"),
		"ws/links/loop.py":     symlink("loop.py"),
		"ws/links/chain.py":    symlink("ok.py"),
		"outside.py":           file("o"),
		"proc/1/status.py":     file("p"),
		"sys/kernel.py":        file("s"),
		"dev/null.py":          file("n"),
		"devices/real.py":      file("r"),
	}
}

func TestGlobRules(t *testing.T) {
	fsys := globTree()
	tests := []struct {
		root, pattern string
		want          []string
	}{
		{"/ws", "*.py", []string{"/ws/.git/objects/x.py", "/ws/a-b/z.py", "/ws/a.py", "/ws/links/abs.py", "/ws/links/chain.py", "/ws/links/ok.py", "/ws/src/b.py", "/ws/src/deep/d.py"}},
		{"/ws", "/*.py", []string{"/ws/a.py"}},
		{"/ws", "src/*.py", []string{"/ws/src/b.py"}},
		{"/ws", "**/*.py", []string{"/ws/a-b/z.py", "/ws/a.py", "/ws/links/abs.py", "/ws/links/chain.py", "/ws/links/ok.py", "/ws/src/b.py", "/ws/src/deep/d.py"}},
		{"/ws", "src/**", []string{"/ws/src/b.py", "/ws/src/c.go", "/ws/src/deep/d.py"}},
		{"/ws", ".*", []string{"/ws/.env", "/ws/src/.hidden.py"}},
		{"/ws", "src/.*", []string{"/ws/src/.hidden.py"}},
		{"/ws", ".git/**", []string{"/ws/.git/config", "/ws/.git/objects/x.py"}},
		{"/ws", "*.{md,go}", []string{"/ws/README.md", "/ws/src/c.go"}},
		{"/ws", "{src/{b,d}.py,*.md}", []string{"/ws/README.md", "/ws/src/b.py"}},
		{"/ws", "[!a]*.py", []string{"/ws/.git/objects/x.py", "/ws/links/chain.py", "/ws/links/ok.py", "/ws/src/b.py", "/ws/src/deep/d.py", "/ws/a-b/z.py"}}, // abs.py starts with "a"
		{"/ws", "*.PY", nil},
		{"/ws", "dir.py", nil},
		{"/ws/src", "*.py", []string{"/ws/src/b.py", "/ws/src/deep/d.py"}},
		{"/ws/src", "/deep/*", []string{"/ws/src/deep/d.py"}},
		{"/", "*.py", []string{"/devices/real.py", "/outside.py", "/ws/.git/objects/x.py", "/ws/a-b/z.py", "/ws/a.py", "/ws/links/abs.py", "/ws/links/chain.py", "/ws/links/ok.py", "/ws/links/out.py", "/ws/src/b.py", "/ws/src/deep/d.py"}},
		{"/ws/links", "*", nil}, // every target lies outside /ws/links
		{"/", "ws/links/*", []string{"/ws/links/abs.py", "/ws/links/chain.py", "/ws/links/ok.py", "/ws/links/out.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.root+" "+tt.pattern, func(t *testing.T) {
			got, err := Glob(context.Background(), fsys, tt.root, tt.pattern, GlobOptions{})
			require.NoError(t, err)
			assert.False(t, got.Truncated)
			want := append([]string(nil), tt.want...)
			sortStrings(want)
			assert.Equal(t, want, pathsOrNil(got.Matches))
		})
	}
}

func TestGlobFileInfo(t *testing.T) {
	got, err := Glob(context.Background(), globTree(), "/ws", "links/{ok,chain}.py", GlobOptions{})
	require.NoError(t, err)
	require.Len(t, got.Matches, 2)
	for _, m := range got.Matches {
		assert.False(t, m.IsDir)
		assert.Equal(t, int64(2), m.Size, "a link reports its target's size")
		assert.True(t, m.Mode.IsRegular())
	}
}

func TestGlobErrors(t *testing.T) {
	fsys := globTree()
	ctx := context.Background()
	tests := []struct {
		root, pattern string
		err           error
	}{
		{"/nope", "*", fs.ErrNotExist},
		{"/ws/a.py", "*", ErrNotDir},
		{"ws", "*", ErrInvalidPath},
		{"/ws", "", ErrInvalidPattern},
		{"/ws", "../*", ErrInvalidPattern},
		{"/ws", "src/../../x", ErrInvalidPattern},
		{"/ws", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}", ErrPatternTooBroad},
	}
	for _, tt := range tests {
		_, err := Glob(ctx, fsys, tt.root, tt.pattern, GlobOptions{})
		requirePathErr(t, err, tt.root, tt.err)
	}
}

func TestGlobLimits(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range 5 {
		fsys[fmt.Sprintf("d/f%d.txt", i)] = file("x")
	}
	ctx := context.Background()

	got, err := Glob(ctx, fsys, "/d", "*.txt", GlobOptions{MaxMatches: 3})
	require.NoError(t, err)
	assert.True(t, got.Truncated)
	assert.Equal(t, []string{"/d/f0.txt", "/d/f1.txt", "/d/f2.txt"}, pathsOrNil(got.Matches))

	got, err = Glob(ctx, fsys, "/d", "*.txt", GlobOptions{MaxMatches: 5})
	require.NoError(t, err)
	assert.False(t, got.Truncated, "exactly MaxMatches is not truncated")
	assert.Len(t, got.Matches, 5)

	got, err = Glob(ctx, fsys, "/d", "*.txt", GlobOptions{Budget: time.Nanosecond})
	require.NoError(t, err)
	assert.True(t, got.Truncated)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Glob(cancelled, fsys, "/d", "*.txt", GlobOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestGlobOS(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"ws/a.txt":        "a",
		"ws/sub/b.txt":    "b",
		"ws/locked/c.txt": "c",
		"other/o.txt":     "o",
	})
	ws := filepath.Join(dir, "ws")
	for name, target := range map[string]string{
		"in.txt":     "sub/b.txt",                       // inside: counts
		"abs.txt":    "/ws/a.txt",                       // absolute, resolved against the fs root: inside
		"out.txt":    "../other/o.txt",                  // leaves the root: dropped
		"host.txt":   filepath.Join(dir, "other/o.txt"), // a host path means nothing in the fs
		"broken.txt": "missing.txt",
		"dirlink":    "sub",
		"viadir.txt": "dirlink/b.txt",
		"loop.txt":   "loop.txt",
		"escape.txt": "sub/../../other/o.txt",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "fifo.txt"), 0o644))
	fsys := os.DirFS(dir)

	var got GlobResult
	var err error
	withTimeout(t, 5*time.Second, func() {
		got, err = Glob(context.Background(), fsys, "/ws", "*.txt", GlobOptions{})
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"/ws/a.txt", "/ws/abs.txt", "/ws/in.txt", "/ws/locked/c.txt", "/ws/sub/b.txt", "/ws/viadir.txt"}, pathsOrNil(got.Matches))
	assert.False(t, got.Truncated)

	got, err = Glob(context.Background(), fsys, "/", "*.txt", GlobOptions{})
	require.NoError(t, err)
	assert.Contains(t, pathsOrNil(got.Matches), "/ws/out.txt", "inside the wider root the link counts")
	assert.Contains(t, pathsOrNil(got.Matches), "/ws/escape.txt")

	if !isRoot() {
		locked := filepath.Join(ws, "locked")
		require.NoError(t, os.Chmod(locked, 0))
		t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
		got, err = Glob(context.Background(), fsys, "/ws", "*.txt", GlobOptions{})
		require.NoError(t, err)
		assert.True(t, got.Truncated, "an unreadable directory marks the result partial")
		assert.NotContains(t, pathsOrNil(got.Matches), "/ws/locked/c.txt")
	}
}

// noLinkFS is a bare fs.FS: no ReadLinkFS, StatFS or ReadDirFS.
type noLinkFS struct{ m fstest.MapFS }

func (f noLinkFS) Open(name string) (fs.File, error) { return f.m.Open(name) }

func TestGlobWithoutReadLinkFS(t *testing.T) {
	fsys := noLinkFS{fstest.MapFS{
		"d/real.txt": file("r"),
		"d/ln.txt":   symlink("real.txt"),
		"d/bad.txt":  symlink("none.txt"),
	}}
	got, err := Glob(context.Background(), fsys, "/d", "*.txt", GlobOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/d/ln.txt", "/d/real.txt"}, pathsOrNil(got.Matches))
}

func pathsOrNil(infos []FileInfo) []string {
	if len(infos) == 0 {
		return nil
	}
	return paths(infos)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
