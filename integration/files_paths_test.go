package integration

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Paths are data, never shell: every file operation works on names that a
// shell would interpret, and nothing they contain is executed.

// hostileNames would run "rm -rf canary" (in the working directory), or
// otherwise misbehave, if any operation pasted them into a shell command.
var hostileNames = []string{
	"with space.txt",
	"single'quote.txt",
	`double"quote.txt`,
	"$HOME",
	"$(rm -rf canary).txt",
	"`rm -rf canary`.txt",
	";rm -rf canary",
	"'; rm -rf canary; '",
	`"; rm -rf canary; "`,
	"new\nline.txt",
	"tab\tand|pipe&amp>redir<.txt",
	"glob*?[x].txt",
	"données/文件 ✓.txt",
	"-rf",
	"--help",
	`back\slash.txt`,
}

// relativeSample are the hostile names also tried as relative paths.
var relativeSample = map[string]bool{
	"with space.txt": true, "$(rm -rf canary).txt": true, "new\nline.txt": true,
	"données/文件 ✓.txt": true, "-rf": true,
}

const canary = "/workspace/canary"

func TestPaths(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		mustWrite(t, sb, canary, "alive")
		base := testDir(t)
		t.Run("ops", func(t *testing.T) { // concurrent calls on one sandbox
			for i, name := range hostileNames {
				for _, relative := range []bool{false, true} {
					if relative && !relativeSample[name] {
						continue
					}
					dir := fmt.Sprintf("%s/%d", base, i)
					if relative {
						dir += "-rel"
					}
					t.Run(fmt.Sprintf("%d/relative=%v", i, relative), func(t *testing.T) {
						t.Parallel()
						checkPathOps(t, sb, dir, name, relative)
					})
				}
			}
		})

		got, err := sb.Read(testCtx(t), canary)
		require.NoError(t, err, "the canary survived")
		assert.Equal(t, "alive", got.Content)
		// Nothing but the canary and our directory appeared in the working
		// directory (no stray "with", "spaces", "-rf"...).
		assert.ElementsMatch(t, []string{canary, base}, lsPaths(t, sb, "/workspace"))
	})
}

// checkPathOps runs every file operation on dir/name and checks that it
// acts on exactly that name. With relative, paths are passed relative to
// the working directory.
func checkPathOps(t *testing.T, sb *sandbox.Sandbox, dir, name string, relative bool) {
	ctx := testCtx(t)
	p := dir + "/" + name // absolute, as results report it
	arg := func(abs string) string {
		if relative {
			return strings.TrimPrefix(abs, "/workspace/")
		}
		return abs
	}
	parent := path.Dir(p) // differs from dir for names with a "/"

	require.NoError(t, sb.Write(ctx, arg(p), []byte("old content\n")), "write %q", p)
	assert.Equal(t, []string{p}, lsPaths(t, sb, arg(parent)), "ls shows exactly the name")
	if parent != dir {
		assert.Equal(t, []string{parent}, lsPaths(t, sb, arg(dir)))
	}

	res, err := sb.Read(ctx, arg(p))
	require.NoError(t, err)
	assert.Equal(t, "old content", res.Content)

	n, err := sb.Edit(ctx, arg(p), "old", "new", false)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	glob, err := sb.Glob(ctx, "*", arg(dir))
	require.NoError(t, err)
	require.Len(t, glob.Matches, 1)
	assert.Equal(t, p, glob.Matches[0].Path)

	roots := []string{dir, p}
	if parent != dir {
		roots = append(roots, parent)
	}
	for _, root := range roots {
		grep, err := sb.Grep(ctx, "new content", arg(root))
		require.NoError(t, err, "grep in %q", root)
		assert.Equal(t, []sandbox.GrepMatch{{Path: p, Line: 1, Text: "new content"}}, grep.Matches, "grep in %q", root)
	}

	down, err := sb.DownloadFiles(ctx, []string{arg(p)})
	require.NoError(t, err)
	require.NoError(t, down[0].Err)
	assert.Equal(t, p, down[0].Path)
	assert.Equal(t, []byte("new content\n"), down[0].Content)

	// Upload to the same name in a fresh directory, then download it.
	up := dir + "/up/" + name
	ups, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: arg(up), Content: []byte("uploaded")}})
	require.NoError(t, err)
	require.NoError(t, ups[0].Err, "upload %q", up)
	assert.Equal(t, up, ups[0].Path)
	assert.Equal(t, []string{up}, lsPaths(t, sb, path.Dir(up)))
	assert.Equal(t, []byte("uploaded"), download(t, sb, up))

	require.NoError(t, sb.Delete(ctx, arg(p)))
	_, err = sb.Read(ctx, arg(p))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, sb.Delete(ctx, arg(dir+"/up")))
	if parent != dir {
		assert.Equal(t, []string{parent}, lsPaths(t, sb, dir))
	} else {
		assert.Empty(t, lsPaths(t, sb, dir))
	}
}

func TestPathsRelative(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		require.Equal(t, "/workspace", sb.WorkingDir())

		mustWrite(t, sb, "rel.txt", "relative\n")
		assert.Equal(t, "relative", mustSh(t, sb, "cat /workspace/rel.txt"))
		assert.Contains(t, lsPaths(t, sb, "."), "/workspace/rel.txt")

		mustWrite(t, sb, "./a/../b/./c.txt", "cleaned")
		assert.Equal(t, "cleaned", mustSh(t, sb, "cat /workspace/b/c.txt"))
		assert.Equal(t, []string{"/workspace/b/c.txt"}, lsPaths(t, sb, "b"))

		res, err := sb.Read(ctx, "b/c.txt")
		require.NoError(t, err)
		assert.Equal(t, "cleaned", res.Content)

		_, err = sb.Read(ctx, "missing.txt")
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/workspace/missing.txt", pe.Path, "errors name the absolute path")

		glob, err := sb.Glob(ctx, "c.txt", "b")
		require.NoError(t, err)
		require.Len(t, glob.Matches, 1)
		assert.Equal(t, "/workspace/b/c.txt", glob.Matches[0].Path)

		up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "up.txt", Content: []byte("u")}})
		require.NoError(t, err)
		assert.Equal(t, "/workspace/up.txt", up[0].Path)
		require.NoError(t, up[0].Err)

		// A leading dash is just a name.
		for _, name := range []string{"-rf", "--help", "-"} {
			mustWrite(t, sb, name, "dash")
			assert.Contains(t, lsPaths(t, sb, "/workspace"), "/workspace/"+name)
			down, err := sb.DownloadFiles(ctx, []string{name})
			require.NoError(t, err)
			require.NoError(t, down[0].Err)
			assert.Equal(t, []byte("dash"), down[0].Content)
			require.NoError(t, sb.Delete(ctx, name))
			assert.NotContains(t, lsPaths(t, sb, "/workspace"), "/workspace/"+name)
		}

		// "../x" leaves the working directory like a shell would.
		if secure { // the rootfs is read-only: the write fails, on /outside.txt
			err := sb.Write(ctx, "../outside.txt", []byte("out"))
			require.ErrorContains(t, err, "read-only file system")
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "/outside.txt", pe.Path)
			return
		}
		mustWrite(t, sb, "../outside.txt", "out")
		assert.Equal(t, "out", mustSh(t, sb, "cat /outside.txt"))
		require.NoError(t, sb.Delete(ctx, "/outside.txt"))
	})
}

func TestPathsInvalid(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		for _, p := range []string{"", "a\x00b", "/workspace/nul\x00.txt"} {
			t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
				ctx := testCtx(t)
				check := func(op string, err error) {
					t.Helper()
					assert.ErrorIs(t, err, sandbox.ErrInvalidPath, op)
					var pe *fs.PathError
					assert.ErrorAs(t, err, &pe, op)
				}
				check("write", sb.Write(ctx, p, []byte("x")))
				_, err := sb.Read(ctx, p)
				check("read", err)
				_, err = sb.Edit(ctx, p, "a", "b", false)
				check("edit", err)
				_, err = sb.Ls(ctx, p)
				check("ls", err)
				check("delete", sb.Delete(ctx, p))
				if p != "" { // an empty search root means the working directory
					_, err = sb.Glob(ctx, "*", p)
					check("glob", err)
					_, err = sb.Grep(ctx, "x", p)
					check("grep", err)
				}

				up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: p, Content: []byte("x")}})
				require.NoError(t, err)
				require.Len(t, up, 1)
				check("upload", up[0].Err)
				assert.Equal(t, "invalid_path", sandbox.ErrorCode(up[0].Err))
				assert.Equal(t, p, up[0].Path)

				down, err := sb.DownloadFiles(ctx, []string{p})
				require.NoError(t, err)
				require.Len(t, down, 1)
				check("download", down[0].Err)
				assert.Equal(t, "invalid_path", sandbox.ErrorCode(down[0].Err))
				assert.Equal(t, p, down[0].Path)
			})
		}
	})
}
