package helper

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// info follows symbolic links and describes directories and files alike.
func TestInfo(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("12345"), 0o640))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "link")))
	res := handle(context.Background(), proto.Request{Op: proto.OpInfo, Path: filepath.Join(dir, "link")}, nil, nil)
	require.Nil(t, res.Error)
	require.Len(t, res.Entries, 1)
	e := res.Entries[0]
	assert.Equal(t, int64(5), e.Size)
	assert.Equal(t, fs.FileMode(0o640), e.Mode)
	assert.False(t, e.IsDir)
	res = handle(context.Background(), proto.Request{Op: proto.OpInfo, Path: dir}, nil, nil)
	require.Nil(t, res.Error)
	assert.True(t, res.Entries[0].Mode.IsDir())
	res = handle(context.Background(), proto.Request{Op: proto.OpInfo, Path: filepath.Join(dir, "missing")}, nil, nil)
	require.NotNil(t, res.Error)
	assert.Equal(t, proto.CodeNotFound, res.Error.Code)
}

// cat reads from Offset, at most Limit+1 bytes, and says where it began.
func TestCatOffset(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("0123456789"), 0o644))
	var got []byte
	send := func(_ proto.Kind, b []byte) error { got = append(got, b...); return nil }
	res := handle(context.Background(), proto.Request{Op: proto.OpCat, Path: p, Offset: 3, Limit: 3}, nil, send)
	require.Nil(t, res.Error)
	assert.Equal(t, "3456", string(got))
	assert.Equal(t, int64(3), res.Offset)
	got = nil
	res = handle(context.Background(), proto.Request{Op: proto.OpCat, Path: p, Offset: 20, Limit: 3}, nil, send)
	require.Nil(t, res.Error)
	assert.Empty(t, got, "past the end: nothing")
}
