//go:build linux

package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command that exceeds the memory limit is reported as an out-of-memory
// kill (exit 137, OOMKilled), distinct from another SIGKILL; the sandbox
// keeps working.
func TestOutOfMemory(t *testing.T) {
	skipInShortOnDocker(t)
	t.Parallel()
	opts := []sandbox.Option{sandbox.WithMemory(64 << 20)}
	if !testenv.Relayed() { // a Kubernetes node has no swap for pods by default
		opts = append(opts, sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
			host.MemorySwap = 64 << 20 // no swap to spill into
		}))
	}
	sb := newSandbox(t, testenv.DebianImage, opts...)
	ctx := testCtx(t)
	res, err := sb.Execute(ctx, `python3 -c "a = b'x' * (512 * 1024 * 1024)"`)
	if sandboxtest.GVisor() {
		// The memory limit is the host's on gVisor's kernel as a whole:
		// the host kills it, and the sandbox ends, saying so.
		require.ErrorIs(t, err, sandbox.ErrGone)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, 137, res.ExitCode, res.Output)
	assert.True(t, res.OOMKilled, "an OOM kill is reported")

	res, err = sb.Execute(ctx, "kill -9 $$")
	require.NoError(t, err)
	assert.Equal(t, 137, res.ExitCode)
	assert.False(t, res.OOMKilled, "another SIGKILL is not an OOM kill")

	c := sb.Command(ctx, `python3 -c "a = b'x' * (512 * 1024 * 1024)"`)
	err = c.Run()
	var exitErr *sandbox.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.True(t, exitErr.OOMKilled())
	assert.Contains(t, err.Error(), "out of memory")

	assert.Equal(t, "ok", mustSh(t, sb, "echo ok"), "the sandbox survives")
}

// scratch mounts a size-limited tmpfs at /workspace (a volume, which
// Docker's archive API sees, unlike a plain tmpfs mount).
func scratch(t *testing.T, size string, bytes int64) sandbox.Option {
	if testenv.Podman(t) {
		// Podman's local volume driver ignores the tmpfs size; a tmpfs mount
		// honours it, and on Podman transfers go through the helper, which
		// sees tmpfs mounts (Docker's archive API does not).
		return sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
			host.Mounts = append(host.Mounts, mount.Mount{
				Type: mount.TypeTmpfs, Target: "/workspace",
				TmpfsOptions: &mount.TmpfsOptions{SizeBytes: bytes, Mode: 0o1777},
			})
		})
	}
	return sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
		host.Mounts = append(host.Mounts, mount.Mount{
			Type: mount.TypeVolume, Target: "/workspace",
			VolumeOptions: &mount.VolumeOptions{NoCopy: true, DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
				"type": "tmpfs", "device": "tmpfs", "o": "size=" + size + ",mode=1777",
			}}},
		})
	})
}

// A full disk during a write is ErrNoSpace; the old content is intact and
// no temporary file is left, for Write, UploadFiles (through the helper or
// Docker's archive API) and Edit.
func TestDiskFull(t *testing.T) {
	testenv.RequireDocker(t, "a small disk is a sized tmpfs (WithContainerConfig); a pod's emptyDir sizeLimit evicts the pod, it does not say ENOSPC")
	skipInShortOnDocker(t)
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, scratch(t, "2m", 2<<20))
	ctx := testCtx(t)
	const original = "original content\n"
	require.NoError(t, sb.Write(ctx, "f.txt", []byte(original)))
	intact := func(what string) {
		t.Helper()
		page, err := sb.Read(ctx, "f.txt")
		require.NoError(t, err, what)
		assert.Equal(t, strings.TrimSuffix(original, "\n"), page.Content, "%s: the old content is intact", what)
		assert.Equal(t, []string{"/workspace/f.txt"}, lsPaths(t, sb, "/workspace"), "%s: no temporary file is left", what)
	}
	big := make([]byte, 3<<20)

	err := sb.Write(ctx, "f.txt", big)
	require.ErrorIs(t, err, sandbox.ErrNoSpace)
	intact("write")

	up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "f.txt", Content: big}})
	require.NoError(t, err)
	require.ErrorIs(t, up[0].Err, sandbox.ErrNoSpace, "upload through the archive API")
	intact("large upload")

	// Fill most of the disk, so that a small upload (through the helper) fails too.
	require.NoError(t, sb.Write(ctx, "/workspace/filler", make([]byte, 1500<<10)))
	up, err = sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "f.txt", Content: make([]byte, 800<<10)}})
	require.NoError(t, err)
	require.ErrorIs(t, up[0].Err, sandbox.ErrNoSpace, "upload through the helper")
	require.NoError(t, sb.Delete(ctx, "/workspace/filler"))
	intact("small upload")

	// An edit that grows the file past the free space.
	require.NoError(t, sb.Write(ctx, "/workspace/filler", make([]byte, 1200<<10)))
	_, err = sb.Edit(ctx, "f.txt", "content", strings.Repeat("much more content ", 50000), false)
	require.ErrorIs(t, err, sandbox.ErrNoSpace)
	require.NoError(t, sb.Delete(ctx, "/workspace/filler"))
	intact("edit")

	assert.Equal(t, "ok", mustSh(t, sb, "echo ok"), "the sandbox survives")
}

// A fork bomb under a pids limit returns (it fails, or its timeout kills
// it) and the sandbox works afterwards, with no bomb process left.
func TestForkBomb(t *testing.T) {
	testenv.RequireDocker(t, "a pod has no pids limit of its own (WithPidsLimit is the kubelet's podPidsLimit, unlimited on the test cluster): the bomb would reach the shared host")
	t.Parallel()
	for _, bomb := range []struct{ name, image, command string }{
		// Every shell process forks and exits: the bomb fails, then dies out.
		{"classic", testenv.BusyboxImage, ":(){ :|:& };:"},
		// Every process keeps forking, whatever fails: only the timeout ends it.
		{"persistent", testenv.DebianImage, "python3 -c '\nimport os, time\nwhile True:\n  try: os.fork()\n  except OSError: time.sleep(0.01)'"},
	} {
		t.Run(bomb.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, bomb.image, sandbox.WithPidsLimit(64))
			ctx := testCtx(t)
			r := within(t, async2(func() (sandbox.ExecuteResponse, error) {
				return sb.Execute(ctx, bomb.command, sandbox.ExecTimeout(3*time.Second))
			}), "the fork bomb")
			t.Logf("exit %d, timed out %v, error %v", r.v.ExitCode, r.v.TimedOut, r.err)
			if bomb.name == "persistent" && sandboxtest.GVisor() {
				// gVisor's Go runtime dies when the pids limit refuses it
				// a thread (google/gvisor#2490): the sandbox ends, within
				// the bound, and says so; the host keeps nothing of it.
				require.ErrorIs(t, r.err, sandbox.ErrGone)
				require.NoError(t, sb.Close())
				return
			}
			require.NoError(t, r.err)
			assert.NotEqual(t, 0, r.v.ExitCode)
			if bomb.name == "persistent" {
				assert.True(t, r.v.TimedOut)
			}
			// What is left is killed or dies out, and reaped by the helper.
			var procs string
			require.Eventually(t, func() bool {
				res, err := sb.Execute(ctx, "ls /proc | grep -c '^[0-9]'")
				procs = fmt.Sprint(res.Output, err)
				n, cerr := strconv.Atoi(strings.TrimSpace(res.Output))
				return err == nil && cerr == nil && n <= 7 // the helpers (init, serve, its spare reaper), the reaper, sh, ls, grep
			}, noHang, 200*time.Millisecond, "processes left after the fork bomb: %s", procs)
			assert.Equal(t, "ok", mustSh(t, sb, "echo ok"))
		})
	}
}

// Commands started together past what the pids limit holds at once (each
// costs a reaper's threads and a shell) start as earlier ones end, as a
// shell retries a fork: none fails with "resource temporarily unavailable"
// (the commands fork nothing themselves: a command's own fork is its own).
func TestCommandsPastPidsLimit(t *testing.T) {
	sb := pidsLimitedSandbox(t)
	ctx := testCtx(t)
	const n = 100
	errs := make(chan error, n)
	for i := range n {
		go func() {
			res, err := sb.Execute(ctx, fmt.Sprintf("echo %d", i))
			if err == nil && (res.ExitCode != 0 || res.Output != fmt.Sprintf("%d\n", i)) {
				err = fmt.Errorf("command %d: exit %d, output %q", i, res.ExitCode, res.Output)
			}
			errs <- err
		}()
	}
	for range n {
		err := within(t, errs, "a command past the pids limit")
		require.NoError(t, err)
	}
}

// A sandbox a fork bomb keeps full: a command's start fails, about 3 s
// (the helper's retry, forkRetry) after no start succeeded, rather than
// wait for room that never comes; requests that start no process (Write,
// Read) go on; the sandbox's Close ends the bomb.
func TestCommandStartInFullSandbox(t *testing.T) {
	sb := pidsLimitedSandbox(t)
	ctx := testCtx(t)
	require.NoError(t, sb.Write(ctx, "before.txt", []byte("written before")))
	// Every process the loop starts stays; once the table is full its
	// starts fail and it tries again, for ever (awk's system() returns -1
	// where a shell's loop would exit on a failed fork, letting slots go).
	_, err := sb.Execute(ctx, `awk 'BEGIN { while (1) system("sleep 1000 &") }' >/dev/null 2>&1 &`)
	require.NoError(t, err)
	full := func() bool { // the engine's count, as the pids limit counts
		u, err := sb.Usage(ctx)
		return err == nil && u.Processes >= 63
	}
	require.Eventually(t, full, noHang, 100*time.Millisecond, "the bomb fills the pids table")

	const bound = 3*time.Second + hostileSlack // forkRetry, with slack for two busy cores
	start := time.Now()
	res, err := sb.Execute(ctx, "echo hi", sandbox.ExecTimeout(time.Minute))
	took := time.Since(start)
	t.Logf("a command in the full sandbox: %v: %v %+v", took.Round(time.Millisecond), err, res)
	if assert.Error(t, err, "the command cannot have run") {
		assert.Contains(t, err.Error(), "process limit (pids)", "the error says why")
	}
	assert.Less(t, took, bound, "a start in a full sandbox fails within the helper's retry")

	// The helper still answers what starts no process.
	require.NoError(t, sb.Write(ctx, "after.txt", []byte("written when full")))
	got, err := sb.Read(ctx, "before.txt")
	require.NoError(t, err)
	assert.Equal(t, "written before", got.Content)
	assert.True(t, full(), "the bomb still holds the table")
}

// pidsLimitedSandbox is a busybox sandbox under a 64-process limit, for a
// parallel test; it skips where the limit is not the sandbox's own (a pod)
// or where reaching it ends the sandbox (gVisor).
func pidsLimitedSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	testenv.RequireDocker(t, "a pod has no pids limit of its own (WithPidsLimit is the kubelet's podPidsLimit)")
	if sandboxtest.GVisor() {
		t.Skip("gVisor's runtime dies when the pids limit refuses it a thread (google/gvisor#2490): the sandbox ends, as TestForkBomb asserts (docs/engines.md)")
	}
	t.Parallel()
	return newSandbox(t, testenv.BusyboxImage, sandbox.WithPidsLimit(64))
}
