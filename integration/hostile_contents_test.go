//go:build linux

package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/tarx"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sandbox's content is hostile: whatever files an agent (or a
// malicious image) leaves, the host process stays within its memory
// bounds, nothing hangs, and nothing is written on the host.

// promptly runs fn and fails the test if it takes longer than noHang.
func promptly(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(noHang):
		t.Fatalf("%s: no answer within %v", what, noHang)
	}
}

func TestHostileFiles(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		t.Run("SymlinkToShadow", func(t *testing.T) {
			// A file the caller downloads is replaced by a link to
			// /etc/shadow: the download yields the container's own file,
			// as the sandbox user may read it, and nothing else.
			dir := testDir(t)
			mustWrite(t, sb, dir+"/report.txt", "the report")
			mustSh(t, sb, "cd "+shellQuote(dir)+" && ln -sf /etc/shadow report.txt")
			res, err := sb.Execute(testCtx(t), "cat /etc/shadow")
			require.NoError(t, err)
			down, err := sb.DownloadFiles(testCtx(t), []string{dir + "/report.txt"})
			require.NoError(t, err)
			switch {
			case res.ExitCode == 0:
				require.NoError(t, down[0].Err)
				assert.Equal(t, res.Output, string(down[0].Content), "the container's /etc/shadow")
			case strings.Contains(res.Output, "No such file"): // busybox has none
				assert.ErrorIs(t, down[0].Err, fs.ErrNotExist)
			default: // the sandbox user may not read it
				assert.ErrorIs(t, down[0].Err, fs.ErrPermission, res.Output)
			}
		})

		t.Run("SymlinkToDevices", func(t *testing.T) {
			dir := testDir(t)
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && cd "+shellQuote(dir)+
				" && ln -s /dev/zero zero && ln -s /dev/urandom random && echo needle > text.txt")
			for _, name := range []string{"zero", "random"} {
				p := dir + "/" + name
				promptly(t, "read "+name, func() {
					_, err := sb.Read(testCtx(t), p)
					assert.ErrorIs(t, err, sandbox.ErrNotRegular, "read %s", name)
				})
				promptly(t, "download "+name, func() {
					down, err := sb.DownloadFiles(testCtx(t), []string{p})
					require.NoError(t, err)
					assert.ErrorIs(t, down[0].Err, sandbox.ErrNotRegular, "download %s", name)
					assert.Nil(t, down[0].Content)
				})
				promptly(t, "edit "+name, func() {
					_, err := sb.Edit(testCtx(t), p, "a", "b", false)
					assert.ErrorIs(t, err, sandbox.ErrNotRegular, "edit %s", name)
				})
			}
			promptly(t, "grep next to devices", func() {
				found, err := sb.Grep(testCtx(t), "needle", dir)
				require.NoError(t, err)
				require.Len(t, found.Matches, 1)
				assert.Equal(t, dir+"/text.txt", found.Matches[0].Path)
			})
		})

		t.Run("FIFO", func(t *testing.T) {
			// Nobody writes to it: opening it for reading would block forever.
			dir := testDir(t)
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && mkfifo "+shellQuote(dir+"/pipe"))
			p := dir + "/pipe"
			promptly(t, "read a FIFO", func() {
				_, err := sb.Read(testCtx(t), p)
				assert.ErrorIs(t, err, sandbox.ErrNotRegular)
			})
			promptly(t, "download a FIFO", func() {
				down, err := sb.DownloadFiles(testCtx(t), []string{p})
				require.NoError(t, err)
				assert.ErrorIs(t, down[0].Err, sandbox.ErrNotRegular)
			})
			promptly(t, "edit a FIFO", func() {
				_, err := sb.Edit(testCtx(t), p, "a", "b", false)
				assert.ErrorIs(t, err, sandbox.ErrNotRegular)
			})
			promptly(t, "grep a FIFO's directory", func() {
				_, err := sb.Grep(testCtx(t), "x", dir)
				require.NoError(t, err)
			})
		})

		t.Run("SparseFile", func(t *testing.T) {
			// 10 GiB that take no space: reading it would take minutes and
			// buffering it would take 10 GiB.
			dir := testDir(t)
			p := dir + "/sparse.bin"
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && truncate -s 10G "+shellQuote(p)+" && echo needle > "+shellQuote(dir+"/text.txt"))
			promptly(t, "download 10 GiB", func() {
				down, err := sb.DownloadFiles(testCtx(t), []string{p})
				require.NoError(t, err)
				assert.ErrorIs(t, down[0].Err, sandbox.ErrTooLarge)
				assert.Nil(t, down[0].Content)
			})
			promptly(t, "read 10 GiB", func() {
				page, err := sb.Read(testCtx(t), p)
				if err != nil {
					assert.ErrorIs(t, err, sandbox.ErrBinaryTooLarge)
				} else {
					assert.LessOrEqual(t, len(page.Content), 512000+1024, "a bounded page")
				}
			})
			promptly(t, "grep next to 10 GiB", func() {
				found, err := sb.Grep(testCtx(t), "needle", dir)
				require.NoError(t, err)
				require.Len(t, found.Matches, 1, "the binary file is skipped")
			})
			promptly(t, "glob next to 10 GiB", func() {
				res, err := sb.Glob(testCtx(t), "*.bin", dir)
				require.NoError(t, err)
				require.Len(t, res.Matches, 1)
				assert.Equal(t, int64(10<<30), res.Matches[0].Size)
			})
		})

		t.Run("HugeLine", func(t *testing.T) {
			// 20 MiB without a line end: one bounded page.
			dir := testDir(t)
			p := dir + "/line.txt"
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && head -c 20971520 /dev/zero | tr '\\0' a > "+shellQuote(p))
			page, err := sb.Read(testCtx(t), p)
			require.NoError(t, err)
			assert.True(t, page.Truncated)
			assert.LessOrEqual(t, len(page.Content), 512000+1024)
			found, err := sb.Grep(testCtx(t), "aaaa", dir)
			require.NoError(t, err)
			require.Len(t, found.Matches, 1)
			assert.LessOrEqual(t, len(found.Matches[0].Text), 64<<10, "a grep line is cut at 64 KiB")
		})
	})
}

// A grep whose matches would not fit in one frame of the protocol returns
// the matches that fit, marked truncated, instead of no answer at all.
func TestGrepFlood(t *testing.T) {
	skipInShort(t)
	sb := newSandbox(t, testenv.BusyboxImage)
	// 2000 lines of 40 KB: 80 MB of matches, over the 64 MiB frame limit.
	mustSh(t, sb, "mkdir flood && yes \"needle $(head -c 40000 /dev/zero | tr '\\0' a)\" | head -n 2000 > flood/big.txt")
	promptly(t, "grep 80 MB of matches", func() {
		found, err := sb.Grep(testCtx(t), "needle", "flood")
		require.NoError(t, err)
		assert.True(t, found.Truncated)
		assert.NotEmpty(t, found.Matches)
		t.Logf("%d matches returned", len(found.Matches))
	})
	found, err := sb.Grep(testCtx(t), "needle", "flood", sandbox.GrepMaxCount(10))
	require.NoError(t, err)
	assert.Len(t, found.Matches, 10)
}

// WithMaxDownloadBytes bounds each downloaded file; a larger one is
// ErrTooLarge, the others in the same call still come.
func TestMaxDownloadBytes(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithMaxDownloadBytes(1024))
	ctx := testCtx(t)
	mustSh(t, sb, "head -c 2048 /dev/zero > two-k && head -c 1024 /dev/zero > one-k && head -c 3000000 /dev/zero > big")
	down, err := sb.DownloadFiles(ctx, []string{"two-k", "one-k", "big"})
	require.NoError(t, err)
	assert.ErrorIs(t, down[0].Err, sandbox.ErrTooLarge)
	assert.Nil(t, down[0].Content)
	require.NoError(t, down[1].Err)
	assert.Len(t, down[1].Content, 1024)
	assert.ErrorIs(t, down[2].Err, sandbox.ErrTooLarge, "through the archive API")
	_, err = sandbox.New(ctx, sandbox.WithMaxDownloadBytes(0))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
}

// memoryUse returns how many bytes fn allocated in total, and how far the
// process's resident memory peaked above where it was before fn.
func memoryUse(t *testing.T, fn func()) (allocated, peak int64) {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := procStatus(t, "VmRSS")
	// Reset the peak (VmHWM) to the current RSS (Linux ≥ 4.0).
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	fn()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc), procStatus(t, "VmHWM") - base
}

// procStatus returns a field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// The host process's memory stays far below the size of what the sandbox
// offers: a refused 1.5 GiB download, a page of a 50 MiB line, 200 MiB of
// command output. (Not parallel: other tests' allocations would count.)
func TestHostMemoryBounded(t *testing.T) {
	skipInShortOnDocker(t)
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	mustSh(t, sb, "truncate -s 1536M huge.bin && head -c 52428800 /dev/zero | tr '\\0' a > line.txt")
	const MiB = 1 << 20

	alloc, peak := memoryUse(t, func() {
		down, err := sb.DownloadFiles(ctx, []string{"huge.bin"})
		require.NoError(t, err)
		assert.ErrorIs(t, down[0].Err, sandbox.ErrTooLarge)
	})
	t.Logf("refused 1.5 GiB download: %d KiB allocated, RSS peak +%d KiB", alloc>>10, peak>>10)
	assert.Less(t, alloc, int64(MiB), "a refused download reads nothing")

	alloc, peak = memoryUse(t, func() {
		page, err := sb.Read(ctx, "line.txt")
		require.NoError(t, err)
		assert.True(t, page.Truncated)
	})
	t.Logf("read of a 50 MiB line: %d KiB allocated, RSS peak +%d KiB", alloc>>10, peak>>10)
	assert.Less(t, alloc, int64(16*MiB), "one bounded page")
	assert.Less(t, peak, int64(50*MiB))

	alloc, peak = memoryUse(t, func() {
		res, err := sb.Execute(ctx, "head -c 209715200 /dev/zero | tr '\\0' a")
		require.NoError(t, err)
		assert.True(t, res.Truncated)
		assert.LessOrEqual(t, len(res.Output), sandbox.DefaultMaxOutputBytes+100)
	})
	t.Logf("200 MiB of output: %d MiB allocated in total, RSS peak +%d KiB", alloc>>20, peak>>10)
	assert.Less(t, peak, int64(100*MiB), "output is capped while it streams")
}

// Nothing a download does writes to the host: not through a link to the
// host's own paths, not relative to the working directory.
func TestDownloadWritesNothingOnHost(t *testing.T) {
	sb := newSandbox(t, testenv.DebianImage)
	ctx := testCtx(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	shadowBefore := fileDigest(t, "/etc/shadow")
	// A relative name that also exists relative to the host's working dir.
	rel := filepath.Base(cwd)
	mustSh(t, sb, "ln -sf /etc/shadow shadow-link && ln -sf "+shellQuote(cwd+"/planted")+" planted-link && echo x > "+shellQuote(rel))
	down, err := sb.DownloadFiles(ctx, []string{"shadow-link", "planted-link", rel, "/etc/shadow"})
	require.NoError(t, err)
	for _, d := range down {
		t.Logf("%s: %d bytes, %v", d.Path, len(d.Content), d.Err)
	}
	entries, err := os.ReadDir(cwd)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written in the working directory")
	assert.Equal(t, shadowBefore, fileDigest(t, "/etc/shadow"), "the host's /etc/shadow is untouched")
	if down[0].Err == nil {
		assert.NotEqual(t, shadowBefore, sha256.Sum256(down[0].Content), "the container's /etc/shadow, not the host's")
	}
}

func fileDigest(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return [32]byte{}
	}
	require.NoError(t, err)
	return sha256.Sum256(b)
}

// The library's tar reader takes the content of the one file Docker
// archived, whatever the archive's names say; it writes nothing anywhere
// and allocates no more than the size limit, whatever a header claims.
func TestTarHostileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "pwned")
	archive := func(hdrs ...*tar.Header) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range hdrs {
			require.NoError(t, tw.WriteHeader(h))
			if h.Typeflag == tar.TypeReg {
				_, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
				require.NoError(t, err)
			}
		}
		require.NoError(t, tw.Close())
		return buf.Bytes()
	}
	for _, name := range []string{strings.Repeat("../", 30) + target[1:], target, "./../" + target, "a/../../../" + target} {
		content, err := tarx.ReadFile(bytes.NewReader(archive(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 5, Mode: 0o644})), 1024)
		require.NoError(t, err, name)
		assert.Equal(t, "xxxxx", string(content))
	}
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeSymlink, Name: "link", Linkname: target},
		{Typeflag: tar.TypeLink, Name: "hard", Linkname: target},
		{Typeflag: tar.TypeChar, Name: "dev", Devmajor: 1, Devminor: 5},
		{Typeflag: tar.TypeFifo, Name: "fifo"},
	} {
		_, err := tarx.ReadFile(bytes.NewReader(archive(h)), 1024)
		assert.ErrorIs(t, err, tarx.ErrNotRegular, "%c", h.Typeflag)
	}
	// A header claiming 1 TiB: refused before any allocation.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: 1 << 40, Mode: 0o644}))
	alloc, _ := memoryUse(t, func() {
		_, err := tarx.ReadFile(bytes.NewReader(buf.Bytes()), 1<<30)
		assert.ErrorIs(t, err, tarx.ErrTooLarge)
	})
	assert.Less(t, alloc, int64(1<<20))
	_, err := os.Lstat(target)
	assert.ErrorIs(t, err, fs.ErrNotExist, "nothing was written")
}

// Output with invalid UTF-8, NUL bytes and terminal escape sequences:
// Execute returns valid UTF-8; the tools hand the model text in which no
// control sequence survives.
func TestHostileOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	const nasty = `printf 'bad \377\376 utf-8, nul \000 byte, \033[2J\033[31mred\033[0m, \033]0;title\007, csi \302\233 31m, progress 10%%\r50%%\r\n'`
	res, err := sb.Execute(ctx, nasty)
	require.NoError(t, err)
	assert.True(t, utf8.ValidString(res.Output))
	assert.Contains(t, res.Output, "\x1b[31m", "Execute returns the bytes as they are, as valid UTF-8")
	mustSh(t, sb, nasty+" > nasty.txt; printf 'plain \\033[31mneedle\\033[0m\\n' > grep.txt")

	set := tools.New(sb, tools.Options{})
	call := func(name string, args any) string {
		t.Helper()
		tool, ok := tools.Lookup(set, name)
		require.True(t, ok)
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		r := tool.Call(ctx, raw)
		require.False(t, r.IsError, "%s: %s", name, r.Text)
		return r.Text
	}
	for name, text := range map[string]string{
		"execute":   call("execute", map[string]any{"command": nasty}),
		"read_file": call("read_file", map[string]any{"file_path": "grep.txt"}),
		"grep":      call("grep", map[string]any{"pattern": "needle", "output_mode": "content"}),
	} {
		assert.True(t, utf8.ValidString(text), name)
		for _, bad := range []string{"\x1b", "\x00", "\x07", "\u009b"} {
			assert.NotContains(t, text, bad, "%s: %q reached the model:\n%q", name, bad, text)
		}
		assert.NotContains(t, strings.ReplaceAll(text, "\r\n", "\n"), "\r", "%s: a lone CR reached the model", name)
		assert.Contains(t, text, "␛[31m", "%s: the escape is shown, not acted on", name)
	}
}
