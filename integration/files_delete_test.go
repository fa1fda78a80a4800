package integration

import (
	"io/fs"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilesDelete(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		t.Run("File", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{"gone.txt": "x", "kept.txt": "y"})
			require.NoError(t, sb.Delete(testCtx(t), dir+"/gone.txt"))
			assert.Equal(t, []string{dir + "/kept.txt"}, lsPaths(t, sb, dir))
			_, err := sb.Read(testCtx(t), dir+"/gone.txt")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		})

		t.Run("DirectoryRecursively", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{"d/a.txt": "a", "d/x/y/z.txt": "z", "d/.hidden": "h", "kept.txt": "k"})
			mustSh(t, sb, "chmod 555 "+shellQuote(dir+"/d/x/y"))
			if mustSh(t, sb, "id -u") != "0" { // root deletes it anyway; another user may not
				require.ErrorIs(t, sb.Delete(testCtx(t), dir+"/d"), fs.ErrPermission)
				mustSh(t, sb, "chmod 755 "+shellQuote(dir+"/d/x/y"))
			}
			require.NoError(t, sb.Delete(testCtx(t), dir+"/d"))
			assert.Equal(t, []string{dir + "/kept.txt"}, lsPaths(t, sb, dir))
		})

		t.Run("Symlink", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{"target/f.txt": "f"})
			mustSh(t, sb, "cd "+shellQuote(dir)+" && ln -s target link && ln -s nowhere broken")
			require.NoError(t, sb.Delete(testCtx(t), dir+"/link"))
			require.NoError(t, sb.Delete(testCtx(t), dir+"/broken"))
			assert.Equal(t, []string{dir + "/target"}, lsPaths(t, sb, dir))
			assert.Equal(t, []string{dir + "/target/f.txt"}, lsPaths(t, sb, dir+"/target"), "the target is untouched")
		})

		t.Run("Missing", func(t *testing.T) {
			p := testDir(t) + "/missing"
			err := sb.Delete(testCtx(t), p)
			require.ErrorIs(t, err, fs.ErrNotExist)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, p, pe.Path)
		})

		t.Run("Root", func(t *testing.T) {
			for _, p := range []string{"/", "//", "/workspace/..", "/.."} {
				err := sb.Delete(testCtx(t), p)
				assert.ErrorIs(t, err, sandbox.ErrInvalidPath, "path %q", p)
			}
			assert.Contains(t, lsPaths(t, sb, "/"), "/workspace", "the root is intact")
		})

		// Keep this one last: it removes the working directory.
		t.Run("WorkingDir", func(t *testing.T) {
			err := sb.Delete(testCtx(t), "/workspace")
			volume := testenv.EngineName() == "kubernetes" // the working directory is an emptyDir's mount point
			switch {
			case secure:
				// A mount point on a read-only rootfs: unlinking it fails
				// first, so nothing is removed.
				require.ErrorContains(t, err, "read-only file system")
				assert.NotEmpty(t, lsPaths(t, sb, "/workspace"))
			case volume:
				// Its content goes; the mount point cannot.
				require.ErrorContains(t, err, "device or resource busy")
			default:
				require.NoError(t, err)
			}
			// The sandbox must keep working. (Bug: helper execs inherit the
			// container's working directory; once it is gone, runc fails to
			// start them and every call ends in "proto: malformed frame".)
			infos, err := sb.Ls(testCtx(t), "/")
			require.NoError(t, err, "ls / after the working directory was deleted")
			for _, fi := range infos {
				if !secure && !volume {
					assert.NotEqual(t, "/workspace", fi.Path)
				}
			}
			mustWrite(t, sb, "/workspace/again.txt", "recreated")
			assert.Equal(t, "/workspace", mustSh(t, sb, "pwd"))
		})
	})
}
