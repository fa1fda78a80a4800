package sandboxeino_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/cloudwego/eino/adk/filesystem"
	"github.com/dockersandbox/sandbox"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBackendEdges: what the in-memory backend has no counterpart for —
// long lines, binary files, the container's root, typed errors.
func TestBackendEdges(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	b := sandboxeino.NewBackend(sb)

	long := strings.Repeat("x", 600000)
	require.NoError(t, b.Write(ctx, &filesystem.WriteRequest{FilePath: "/workspace/long.txt", Content: long + "\nnext\n"}))
	s, err := b.Read(ctx, &filesystem.ReadRequest{FilePath: "/workspace/long.txt"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s, "     1\txxx"), s[:20])
	assert.Contains(t, s, "xxx\n\n[Output was truncated due to size limits.", "the note follows the cut line, unnumbered")
	assert.LessOrEqual(t, len(s), 512000+len("     1\t"))
	s, err = b.Read(ctx, &filesystem.ReadRequest{FilePath: "/workspace/long.txt", Offset: 1})
	require.NoError(t, err)
	assert.Equal(t, "     2\tnext", s)

	require.NoError(t, sb.Write(ctx, "/workspace/bin.dat", []byte{0, 1, 2, 0xff}))
	s, err = b.Read(ctx, &filesystem.ReadRequest{FilePath: "/workspace/bin.dat"})
	require.NoError(t, err)
	assert.Equal(t, "/workspace/bin.dat is a binary file (4 bytes); its content cannot be shown (read_file returns text only).", s)
	err = b.Write(ctx, &filesystem.WriteRequest{FilePath: "/workspace/bin.dat", Content: "x"})
	assert.ErrorIs(t, err, fs.ErrExist, "a binary file exists too")

	infos, err := b.LsInfo(ctx, &filesystem.LsInfoRequest{})
	require.NoError(t, err)
	assert.Contains(t, infos, filesystem.FileInfo{Path: "/workspace"}, "an empty path is /")
	err = b.Write(ctx, &filesystem.WriteRequest{FilePath: "/workspace", Content: "x"})
	assert.ErrorIs(t, err, sandbox.ErrIsDir)

	_, err = b.Read(ctx, &filesystem.ReadRequest{FilePath: "/workspace/nope"})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = b.Read(ctx, &filesystem.ReadRequest{})
	assert.ErrorIs(t, err, sandbox.ErrInvalidPath)
	err = b.Edit(ctx, &filesystem.EditRequest{FilePath: "/workspace/long.txt", OldString: "", NewString: "y"})
	assert.ErrorIs(t, err, sandboxeino.ErrEmptyOldString)
	err = b.Edit(ctx, &filesystem.EditRequest{FilePath: "/workspace/long.txt", OldString: "absent", NewString: "y"})
	assert.ErrorIs(t, err, sandbox.ErrStringNotFound)
	err = b.Edit(ctx, &filesystem.EditRequest{FilePath: "/workspace/long.txt", OldString: "x", NewString: "y"})
	assert.ErrorIs(t, err, sandbox.ErrMultipleOccurrences)
	_, err = b.GrepRaw(ctx, &filesystem.GrepRequest{Pattern: ""})
	assert.ErrorIs(t, err, sandbox.ErrInvalidPattern)

	// Relative paths are the working directory's; glob's default is "/".
	matches, err := b.GrepRaw(ctx, &filesystem.GrepRequest{Pattern: "next"})
	require.NoError(t, err)
	assert.Equal(t, []filesystem.GrepMatch{{Path: "/workspace/long.txt", Line: 2, Content: "next"}}, matches)
	files, err := b.GlobInfo(ctx, &filesystem.GlobInfoRequest{Pattern: "long.txt"})
	require.NoError(t, err)
	assert.Equal(t, []filesystem.FileInfo{{Path: "/workspace/long.txt"}}, files)
	files, err = b.GlobInfo(ctx, &filesystem.GlobInfoRequest{Pattern: "/workspace/*.dat", Path: "/etc"})
	require.NoError(t, err)
	assert.Empty(t, files, "an absolute pattern outside the path matches nothing under it")

	for _, err := range []error{
		func() error { _, err := b.LsInfo(ctx, nil); return err }(),
		func() error { _, err := b.Read(ctx, nil); return err }(),
		func() error { _, err := b.GrepRaw(ctx, nil); return err }(),
		func() error { _, err := b.GlobInfo(ctx, nil); return err }(),
		b.Write(ctx, nil),
		b.Edit(ctx, nil),
		func() error { _, err := b.Execute(ctx, nil); return err }(),
	} {
		assert.Error(t, err)
	}
	_, err = b.Execute(ctx, &filesystem.ExecuteRequest{})
	assert.True(t, errors.Is(err, sandbox.ErrEmptyCommand), "%v", err)
}
