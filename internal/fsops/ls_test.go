package fsops

import (
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

// paths returns the Path of each FileInfo.
func paths(infos []FileInfo) []string {
	out := make([]string, 0, len(infos))
	for _, fi := range infos {
		out = append(out, fi.Path)
	}
	return out
}

func TestLsMapFS(t *testing.T) {
	mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	fsys := fstest.MapFS{
		"w/b.txt":       {Data: []byte("bbb"), Mode: 0o600, ModTime: mtime},
		"w/.hidden":     file("h"),
		"w/a/inner.txt": file("i"),
		"w/empty":       {Mode: fs.ModeDir | 0o755},
		"w/ln":          symlink("a"),
		"top.txt":       file("t"),
	}
	got, err := Ls(fsys, "/w")
	require.NoError(t, err)
	assert.Equal(t, []string{"/w/.hidden", "/w/a", "/w/b.txt", "/w/empty", "/w/ln"}, paths(got))
	assert.True(t, got[1].IsDir)
	assert.Equal(t, FileInfo{Path: "/w/b.txt", Size: 3, ModTime: mtime, Mode: 0o600}, got[2])
	assert.True(t, got[3].IsDir)
	assert.False(t, got[4].IsDir, "a symlink to a directory is not a directory")
	assert.Equal(t, fs.ModeSymlink, got[4].Mode.Type())

	got, err = Ls(fsys, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/top.txt", "/w"}, paths(got))

	got, err = Ls(fsys, "/w/empty/")
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.NotNil(t, got)

	got, err = Ls(fsys, "/w/ln") // the argument itself is followed
	require.NoError(t, err)
	assert.Equal(t, []string{"/w/ln/inner.txt"}, paths(got))

	_, err = Ls(fsys, "/missing")
	requirePathErr(t, err, "/missing", fs.ErrNotExist)
	_, err = Ls(fsys, "/top.txt")
	requirePathErr(t, err, "/top.txt", ErrNotDir)
	_, err = Ls(fsys, "w")
	requirePathErr(t, err, "w", ErrInvalidPath)
}

func TestLsOS(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"w/f.txt": "data", "w/sub/x": ""})
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "w/dirlink")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "w/broken")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "w/fifo"), 0o644))
	fsys := os.DirFS(dir)

	var got []FileInfo
	var err error
	withTimeout(t, 5*time.Second, func() { got, err = Ls(fsys, "/w") })
	require.NoError(t, err)
	assert.Equal(t, []string{"/w/broken", "/w/dirlink", "/w/f.txt", "/w/fifo", "/w/sub"}, paths(got))
	assert.Equal(t, []bool{false, false, false, false, true},
		[]bool{got[0].IsDir, got[1].IsDir, got[2].IsDir, got[3].IsDir, got[4].IsDir})
	assert.Equal(t, fs.ModeNamedPipe, got[3].Mode.Type())
	assert.Equal(t, int64(4), got[2].Size)

	_, err = Ls(fsys, "/w/f.txt")
	requirePathErr(t, err, "/w/f.txt", ErrNotDir)

	if !isRoot() {
		locked := filepath.Join(dir, "w/sub")
		require.NoError(t, os.Chmod(locked, 0))
		t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
		_, err = Ls(fsys, "/w/sub")
		requirePathErr(t, err, "/w/sub", fs.ErrPermission)
	}
}
