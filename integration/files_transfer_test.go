package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Integration tests of UploadFiles and DownloadFiles against the real
// daemon, on every test image.

func TestTransfer(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		t.Run("RoundTrip", func(t *testing.T) {
			dir := testDir(t)
			rel := strings.TrimPrefix(dir, "/workspace/")
			files := []sandbox.FileUpload{
				{Path: dir + "/a.txt", Content: []byte("alpha\n")},
				{Path: rel + "/sub/b.bin", Content: allBytes},
				{Path: dir + "/empty", Content: nil},
				{Path: "./" + rel + "/c.txt", Content: []byte("no newline")},
			}
			want := []string{dir + "/a.txt", dir + "/sub/b.bin", dir + "/empty", dir + "/c.txt"}

			up, err := sb.UploadFiles(testCtx(t), files)
			require.NoError(t, err)
			require.Len(t, up, len(files))
			for i, r := range up {
				assert.Equal(t, want[i], r.Path, "upload %d: the resolved absolute path", i)
				assert.NoError(t, r.Err, "upload %d", i)
			}

			// Download in another order, with relative and absolute paths.
			down, err := sb.DownloadFiles(testCtx(t), []string{"./" + rel + "/c.txt", dir + "/empty", rel + "/sub/b.bin", dir + "/a.txt"})
			require.NoError(t, err)
			require.Len(t, down, 4)
			for i, j := range []int{3, 2, 1, 0} {
				assert.Equal(t, want[j], down[i].Path, "download %d", i)
				require.NoError(t, down[i].Err, "download %d", i)
				assert.Equal(t, len(files[j].Content), len(down[i].Content), "download %d", i)
				assert.True(t, bytes.Equal(files[j].Content, down[i].Content), "download %d: content", i)
			}
			assert.Equal(t, "alpha\n", mustSh(t, sb, "cat "+shellQuote(dir+"/a.txt"))+"\n")
		})

		t.Run("Overwrites", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "a longer old content\n")
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: p, Content: []byte("new")}})
			require.NoError(t, err)
			require.NoError(t, up[0].Err)
			assert.Equal(t, []byte("new"), download(t, sb, p))
		})

		t.Run("OverwritesLarge", func(t *testing.T) {
			// Through the archive API; the old content is freed after the
			// answer, and nothing of it is left.
			dir := testDir(t)
			p := dir + "/big.bin"
			old := bytes.Repeat([]byte("o"), 3<<20)
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: p, Content: old}})
			require.NoError(t, err)
			require.NoError(t, up[0].Err)
			mustSh(t, sb, "chmod 600 "+shellQuote(p))
			for i := range 3 {
				content := bytes.Repeat([]byte{byte('a' + i)}, 2<<20+i)
				up, err = sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: p, Content: content}})
				require.NoError(t, err)
				require.NoError(t, up[0].Err)
				assert.True(t, bytes.Equal(content, download(t, sb, p)), "upload %d", i)
			}
			assert.Equal(t, "600", mustSh(t, sb, "stat -c %a "+shellQuote(p)), "the old file's mode is kept")
			assert.Eventually(t, func() bool { return len(lsPaths(t, sb, dir)) == 1 }, 5*time.Second, 20*time.Millisecond,
				"old contents left: %v", lsPaths(t, sb, dir))
		})

		t.Run("SamePathTwice", func(t *testing.T) {
			p := testDir(t) + "/twice.txt"
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: p, Content: []byte("first")}, {Path: p, Content: []byte("second")}})
			require.NoError(t, err)
			require.Len(t, up, 2)
			assert.NoError(t, up[0].Err)
			assert.NoError(t, up[1].Err)
			assert.Equal(t, []byte("second"), download(t, sb, p), "the last one wins")
		})

		t.Run("PartialFailure", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/file.txt", "a regular file")
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{
				{Path: dir + "/good1.txt", Content: []byte("one")},
				{Path: dir + "/file.txt/child.txt", Content: []byte("nope")},
				{Path: dir + "/good2.txt", Content: []byte("two")},
				{Path: "", Content: []byte("nope")},
			})
			require.NoError(t, err)
			require.Len(t, up, 4)
			assert.NoError(t, up[0].Err)
			assert.NoError(t, up[2].Err)
			require.Error(t, up[1].Err)
			assert.ErrorIs(t, up[1].Err, sandbox.ErrNotDir)
			assert.Equal(t, dir+"/file.txt/child.txt", up[1].Path)
			var pe *fs.PathError
			assert.ErrorAs(t, up[1].Err, &pe)
			assert.ErrorIs(t, up[3].Err, sandbox.ErrInvalidPath)
			assert.Equal(t, "invalid_path", sandbox.ErrorCode(up[3].Err))

			down, err := sb.DownloadFiles(testCtx(t), []string{dir + "/good1.txt", dir + "/missing.txt", dir + "/good2.txt", dir + "/file.txt"})
			require.NoError(t, err)
			require.Len(t, down, 4)
			assert.Equal(t, []byte("one"), down[0].Content)
			assert.NoError(t, down[0].Err)
			assert.ErrorIs(t, down[1].Err, fs.ErrNotExist)
			assert.Nil(t, down[1].Content)
			assert.Equal(t, []byte("two"), down[2].Content)
			assert.Equal(t, []byte("a regular file"), down[3].Content, "the blocking file is intact")
		})

		t.Run("ErrorCodes", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/sub/f.txt", "x")

			down, err := sb.DownloadFiles(testCtx(t), []string{dir + "/sub", dir + "/missing", "", "a\x00b", dir + "/sub/f.txt/x"})
			require.NoError(t, err)
			require.Len(t, down, 5)
			assert.ErrorIs(t, down[0].Err, sandbox.ErrIsDir)
			assert.Equal(t, "is_directory", sandbox.ErrorCode(down[0].Err))
			assert.ErrorIs(t, down[1].Err, fs.ErrNotExist)
			assert.Equal(t, "file_not_found", sandbox.ErrorCode(down[1].Err))
			assert.Equal(t, "invalid_path", sandbox.ErrorCode(down[2].Err))
			assert.Equal(t, "invalid_path", sandbox.ErrorCode(down[3].Err))
			assert.Error(t, down[4].Err, "a path below a regular file")
			for i, d := range down {
				assert.Nil(t, d.Content, "download %d", i)
			}

			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{
				{Path: dir + "/sub", Content: []byte("x")},
				{Path: "/", Content: []byte("x")},
				{Path: dir + "/sub/", Content: []byte("x")},
			})
			require.NoError(t, err)
			require.Len(t, up, 3)
			for i, r := range up {
				assert.ErrorIs(t, r.Err, sandbox.ErrIsDir, "upload %d", i)
				assert.Equal(t, "is_directory", sandbox.ErrorCode(r.Err), "upload %d", i)
			}
			assert.Equal(t, []string{dir + "/sub/f.txt"}, lsPaths(t, sb, dir+"/sub"), "the directory is intact")
			assert.Equal(t, "", sandbox.ErrorCode(nil))
			assert.Equal(t, "", sandbox.ErrorCode(sandbox.ErrNoSpace), "an error without a code")
			assert.Equal(t, "", sandbox.ErrorCode(fmt.Errorf("upload: %w", sandbox.ErrTooLarge)), "an error without a code")
		})

		t.Run("Symlinks", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/real/target.txt", "through the link")
			mustSh(t, sb, "cd "+shellQuote(dir)+" && ln -s real/target.txt rel-link && ln -s "+
				shellQuote(dir+"/real/target.txt")+" abs-link && ln -s real dirlink && ln -s nowhere broken")
			down, err := sb.DownloadFiles(testCtx(t), []string{dir + "/rel-link", dir + "/abs-link", dir + "/dirlink/target.txt", dir + "/dirlink", dir + "/broken"})
			require.NoError(t, err)
			require.Len(t, down, 5)
			for i := 0; i < 3; i++ {
				require.NoError(t, down[i].Err, "download %d", i)
				assert.Equal(t, []byte("through the link"), down[i].Content, "download %d", i)
			}
			assert.Equal(t, dir+"/rel-link", down[0].Path, "the response keeps the asked path")
			assert.Equal(t, "is_directory", sandbox.ErrorCode(down[3].Err))
			assert.Equal(t, "file_not_found", sandbox.ErrorCode(down[4].Err))
		})

		t.Run("Large", func(t *testing.T) {
			p := testDir(t) + "/big.bin"
			content := make([]byte, 32<<20)
			rng := rand.NewChaCha8([32]byte{1, 2, 3})
			_, _ = rng.Read(content)
			sum := sha256.Sum256(content)

			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: p, Content: content}})
			require.NoError(t, err)
			require.NoError(t, up[0].Err)
			out := mustSh(t, sb, "sha256sum "+shellQuote(p))
			assert.Equal(t, hex.EncodeToString(sum[:]), strings.Fields(out)[0], "checksum in the sandbox")

			got := download(t, sb, p)
			require.Equal(t, len(content), len(got))
			assert.True(t, bytes.Equal(content, got), "downloaded bytes differ")
		})

		t.Run("MtimeAndMode", func(t *testing.T) {
			dir := testDir(t)
			p := dir + "/fresh.txt"
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: p, Content: []byte("fresh")}})
			require.NoError(t, err)
			require.NoError(t, up[0].Err)
			infos, err := sb.Ls(testCtx(t), dir)
			require.NoError(t, err)
			require.Len(t, infos, 1)
			assert.Equal(t, p, infos[0].Path)
			assert.WithinDuration(t, time.Now(), infos[0].ModTime, time.Minute, "mtime is now, not 1970")
			assert.Equal(t, int64(5), infos[0].Size)
			assert.Equal(t, "644", mustSh(t, sb, "stat -c %a "+shellQuote(p)))
		})
	})
}

// TestTransferUser checks uploads and downloads as a non-root sandbox user.
func TestTransferUser(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		t.Run("OwnedBySandboxUser", func(t *testing.T) {
			dir := testDir(t)
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{
				{Path: dir + "/top.txt", Content: []byte("top")},
				{Path: dir + "/new/nested/deep.txt", Content: []byte("deep")},
			})
			require.NoError(t, err)
			for i, r := range up {
				require.NoError(t, r.Err, "upload %d", i)
			}
			out := mustSh(t, sb, "cd "+shellQuote(dir)+" && stat -c '%u:%g %n' top.txt new new/nested new/nested/deep.txt")
			assert.Equal(t, "1000:1000 top.txt\n1000:1000 new\n1000:1000 new/nested\n1000:1000 new/nested/deep.txt", out)
			// The user can edit what it uploaded.
			n, err := sb.Edit(testCtx(t), dir+"/new/nested/deep.txt", "deep", "edited", false)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			mustSh(t, sb, "echo more >> "+shellQuote(dir+"/top.txt"))
		})

		t.Run("WriteOwnedBySandboxUser", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/a/w.txt", "w")
			assert.Equal(t, "1000 1000", mustSh(t, sb, "cd "+shellQuote(dir)+" && stat -c %u a a/w.txt | tr '\\n' ' ' | sed 's/ $//'"))
		})

		t.Run("WriteRespectsFilePermissions", func(t *testing.T) {
			requireExecAs(t)
			dir := testDir(t)
			// The user's directory, open to root (which may lack CAP_DAC_OVERRIDE).
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && chmod 777 "+shellQuote(dir))
			mustSh(t, sb, "echo root > "+shellQuote(dir+"/root.txt")+" && chmod 644 "+shellQuote(dir+"/root.txt"), sandbox.ExecUser("0"))
			err := sb.Write(testCtx(t), dir+"/root.txt", []byte("mine"))
			assert.ErrorIs(t, err, fs.ErrPermission, "the directory is writable, the file is not")
			_, err = sb.Edit(testCtx(t), dir+"/root.txt", "root", "mine", false)
			assert.ErrorIs(t, err, fs.ErrPermission)
			assert.Equal(t, "root", mustSh(t, sb, "cat "+shellQuote(dir+"/root.txt")))
		})

		t.Run("UploadThroughSymlink", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/target.txt", "old")
			mustSh(t, sb, "ln -s target.txt "+shellQuote(dir+"/link.txt"))
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: dir + "/link.txt", Content: []byte("new")}})
			require.NoError(t, err)
			require.NoError(t, up[0].Err)
			assert.Equal(t, "new", mustSh(t, sb, "cat "+shellQuote(dir+"/target.txt")))
			assert.Equal(t, "target.txt", mustSh(t, sb, "readlink "+shellQuote(dir+"/link.txt")), "the link stays a link")
		})

		t.Run("PermissionDenied", func(t *testing.T) {
			requireExecAs(t)
			dir := testDir(t)
			// The sandbox user's directory, open to root (which may lack CAP_DAC_OVERRIDE).
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && chmod 777 "+shellQuote(dir))
			mustSh(t, sb, "cd "+shellQuote(dir)+
				" && echo secret > secret.txt && chmod 600 secret.txt && echo public > public.txt && chmod 644 public.txt"+
				" && mkdir locked && chmod 755 locked",
				sandbox.ExecUser("0"))
			down, err := sb.DownloadFiles(testCtx(t), []string{dir + "/secret.txt", dir + "/public.txt"})
			require.NoError(t, err)
			require.Len(t, down, 2)
			assert.ErrorIs(t, down[0].Err, fs.ErrPermission)
			assert.Equal(t, "permission_denied", sandbox.ErrorCode(down[0].Err))
			assert.Nil(t, down[0].Content)
			require.NoError(t, down[1].Err)
			assert.Equal(t, []byte("public\n"), down[1].Content)

			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{
				{Path: dir + "/public.txt", Content: []byte("overwritten")}, // root's file, not writable
				{Path: dir + "/locked/new.txt", Content: []byte("x")},       // root's directory
				{Path: dir + "/mine.txt", Content: []byte("mine")},
			})
			require.NoError(t, err)
			require.Len(t, up, 3)
			for i := 0; i < 2; i++ {
				assert.ErrorIs(t, up[i].Err, fs.ErrPermission, "upload %d", i)
				assert.Equal(t, "permission_denied", sandbox.ErrorCode(up[i].Err), "upload %d", i)
			}
			assert.NoError(t, up[2].Err)
			assert.Equal(t, "public", mustSh(t, sb, "cat "+shellQuote(dir+"/public.txt")), "root's file is unchanged")
			assert.Equal(t, "0", mustSh(t, sb, "ls "+shellQuote(dir+"/locked")+" | wc -l | tr -d ' '"))

			// The file operations see the same permissions.
			_, err = sb.Read(testCtx(t), dir+"/secret.txt")
			assert.ErrorIs(t, err, fs.ErrPermission, "read")
			_, err = sb.Edit(testCtx(t), dir+"/secret.txt", "secret", "x", false)
			assert.ErrorIs(t, err, fs.ErrPermission, "edit")
			err = sb.Write(testCtx(t), dir+"/locked/new.txt", []byte("x"))
			assert.ErrorIs(t, err, fs.ErrPermission, "write into root's directory")
			_, err = sb.Ls(testCtx(t), "/root")
			assert.ErrorIs(t, err, fs.ErrPermission, "ls /root")
		})

		t.Run("ExecUserRoot", func(t *testing.T) {
			requireExecAs(t)
			assert.Equal(t, "0", mustSh(t, sb, "id -u", sandbox.ExecUser("0")))
			assert.Equal(t, strconv.Itoa(1000), mustSh(t, sb, "id -u"))
		})
	}, sandboxUser())
}
