package fsops

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byteNamesTree writes files whose names are not UTF-8 next to the names
// encoding/json would turn them into, and returns DirFS of the tree.
func byteNamesTree(t *testing.T) fs.FS {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"x\xff":                "ff needle\n",
		"x\uFFFD":              "fffd needle\n",
		"\xc3\x28":             "c328 needle\n",
		"d\xfe/in\xed\xa0\x80": "deep needle\n",
		"t.txt":                "8 bit needle \xff\n",
		"plain.txt":            "plain needle\n",
	})
	return DirFS(dir)
}

func TestByteNamesLs(t *testing.T) {
	fsys := byteNamesTree(t)
	got, err := Ls(fsys, "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"/d\xfe", "/plain.txt", "/t.txt", "/x\uFFFD", "/x\xff", "/\xc3\x28"}, pathsOrNil(got))
	got, err = Ls(fsys, "/d\xfe")
	require.NoError(t, err)
	assert.Equal(t, []string{"/d\xfe/in\xed\xa0\x80"}, pathsOrNil(got))
	_, err = Ls(fsys, "/d\xfd")
	assert.ErrorIs(t, err, fs.ErrNotExist, "a neighbouring byte is another name")
}

func TestByteNamesRead(t *testing.T) {
	fsys := byteNamesTree(t)
	for name, want := range map[string]string{"/x\xff": "ff needle", "/x\uFFFD": "fffd needle", "/d\xfe/in\xed\xa0\x80": "deep needle"} {
		r, err := Read(fsys, name, 0, 10)
		require.NoError(t, err, "%q", name)
		assert.Equal(t, want, r.Content, "%q", name)
	}
	_, err := Read(fsys, "/x\xfe", 0, 10)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestByteNamesGlob(t *testing.T) {
	fsys := byteNamesTree(t)
	for pattern, want := range map[string][]string{
		"x\xff":       {"/x\xff"},
		"x\uFFFD":     {"/x\uFFFD"},
		"x?":          {"/x\uFFFD", "/x\xff"},
		"[x\xff]\xff": {"/x\xff"},
		"*\x80":       {"/d\xfe/in\xed\xa0\x80"},
		"d\xfe/*":     {"/d\xfe/in\xed\xa0\x80"},
		"\xc3(":       {"/\xc3\x28"},
	} {
		got, err := Glob(context.Background(), fsys, "/", pattern, GlobOptions{})
		require.NoError(t, err, "%q", pattern)
		assert.Equal(t, want, pathsOrNil(got.Matches), "%q", pattern)
	}
	got, err := Glob(context.Background(), fsys, "/d\xfe", "*", GlobOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"/d\xfe/in\xed\xa0\x80"}, pathsOrNil(got.Matches))
}

func TestByteNamesGrep(t *testing.T) {
	fsys := byteNamesTree(t)
	got, err := Grep(context.Background(), fsys, "/", "needle", GrepOptions{})
	require.NoError(t, err)
	byPath := map[string]string{}
	for _, m := range got.Matches {
		byPath[m.Path] = m.Text
	}
	assert.Equal(t, map[string]string{
		"/x\xff": "ff needle", "/x\uFFFD": "fffd needle", "/\xc3\x28": "c328 needle",
		"/d\xfe/in\xed\xa0\x80": "deep needle", "/plain.txt": "plain needle", "/t.txt": "8 bit needle \xff",
	}, byPath)

	got, err = Grep(context.Background(), fsys, "/", "needle \xff", GrepOptions{})
	require.NoError(t, err)
	require.Len(t, got.Matches, 1, "the pattern is bytes too")
	assert.Equal(t, "/t.txt", got.Matches[0].Path)

	got, err = Grep(context.Background(), fsys, "/x\xff", "needle", GrepOptions{})
	require.NoError(t, err)
	require.Len(t, got.Matches, 1)
	assert.Equal(t, "/x\xff", got.Matches[0].Path)

	got, err = Grep(context.Background(), fsys, "/", "needle", GrepOptions{Glob: "x\xff"})
	require.NoError(t, err)
	require.Len(t, got.Matches, 1)
	assert.Equal(t, "/x\xff", got.Matches[0].Path)
}

func TestDirFSNames(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a\xff/b": "b"})
	require.NoError(t, os.Symlink("a\xff/b", filepath.Join(dir, "l\xfe")))
	fsys := DirFS(dir).(fs.ReadLinkFS)
	target, err := fsys.ReadLink("l\xfe")
	require.NoError(t, err)
	assert.Equal(t, "a\xff/b", target)
	info, err := fsys.Lstat("l\xfe")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type())
	data, err := fs.ReadFile(fsys, "a\xff/b")
	require.NoError(t, err)
	assert.Equal(t, "b", string(data))
	for _, bad := range []string{"", "/a", "a/", "a//b", "./a", "a/../b", "a\x00b", ".."} {
		_, err := fsys.Lstat(bad)
		assert.ErrorIs(t, err, fs.ErrInvalid, "%q", bad)
		_, err = DirFS(dir).Open(bad)
		assert.ErrorIs(t, err, fs.ErrInvalid, "%q", bad)
	}
	_, err = DirFS("").Open(".")
	assert.Error(t, err)
}
