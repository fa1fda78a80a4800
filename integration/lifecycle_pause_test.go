package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// engineState is the container's state as the engine says.
func engineState(t testing.TB, id string) string {
	t.Helper()
	info, err := inspectBox(t, id)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(info.State)
}

// counter starts a command that appends 1, 2, 3... to file and prints each
// number, every 20 ms, until stopFile exists.
func counter(t *testing.T, sb *sandbox.Sandbox, file, stopFile string, stdin bool) (*sandbox.Cmd, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	c := sb.Command(testCtx(t), fmt.Sprintf(`i=0; while [ ! -e %s ]; do i=$((i+1)); echo $i >> %s; echo $i; sleep 0.02; done`, stopFile, file))
	c.Stdout = &out
	if stdin {
		c.Stdin = strings.NewReader("") // an exec of its own, not the shared channel
	}
	require.NoError(t, c.Start())
	return c, &out
}

// checkCount requires lines "1".."n" with nothing missing or doubled, n > min.
func checkCount(t *testing.T, text string, min int) int {
	t.Helper()
	lines := strings.Fields(text)
	for i, l := range lines {
		require.Equal(t, strconv.Itoa(i+1), l, "line %d of the counter", i+1)
	}
	require.Greater(t, len(lines), min)
	return len(lines)
}

// TestPauseResumeCycles: ten pauses and resumes under running commands (one
// on the shared channel, one on an exec of its own), then one pause longer
// than every silence watchdog of the library: the commands go on counting
// where they stopped, nothing lost or doubled, and end normally.
func TestPauseResumeCycles(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		dir := testDir(t)
		mustSh(t, sb, "mkdir -p "+dir)
		shared, sharedOut := counter(t, sb, dir+"/a", dir+"/stop", false)
		own, ownOut := counter(t, sb, dir+"/b", dir+"/stop", true)
		last := 0
		for i := range 10 {
			time.Sleep(150 * time.Millisecond)
			require.NoError(t, sb.Pause(ctx), "cycle %d", i)
			require.True(t, sb.Paused())
			require.Equal(t, "paused", engineState(t, sb.ID()))
			time.Sleep(150 * time.Millisecond)
			require.NoError(t, sb.Resume(ctx), "cycle %d", i)
			require.False(t, sb.Paused())
			n := checkCount(t, mustSh(t, sb, "cat "+dir+"/a"), last)
			last = n
		}
		// Longer than stallTimeout plus its check (5+5 s) and silenceLimit (10 s).
		require.NoError(t, sb.Pause(ctx))
		time.Sleep(12 * time.Second)
		require.NoError(t, sb.Resume(ctx))
		time.Sleep(300 * time.Millisecond)
		mustSh(t, sb, "touch "+dir+"/stop")
		require.NoError(t, shared.Wait(), "the command on the shared channel")
		require.NoError(t, own.Wait(), "the command on its own exec")
		a, b := mustSh(t, sb, "cat "+dir+"/a"), mustSh(t, sb, "cat "+dir+"/b")
		n := checkCount(t, a, last)
		checkCount(t, b, 10)
		assert.Equal(t, a+"\n", sharedOut.String(), "the shared command's output is the file")
		assert.Equal(t, b+"\n", ownOut.String(), "the own exec's output is the file")
		t.Logf("counted to %d", n)
	})
}

// TestPausedCallsTyped: every call on a paused sandbox fails at once with
// ErrPaused, and works again after Resume; Pause and Resume are idempotent.
func TestPausedCallsTyped(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		f := testDir(t) + ".txt"
		mustWrite(t, sb, f, "x")
		require.NoError(t, sb.Pause(ctx))
		require.NoError(t, sb.Pause(ctx), "a second Pause")
		start := time.Now()
		calls := map[string]func() error{
			"Execute": func() error { _, err := sb.Execute(ctx, "true"); return err },
			"Read":    func() error { _, err := sb.Read(ctx, f); return err },
			"Write":   func() error { return sb.Write(ctx, f, []byte("y")) },
			"Ls":      func() error { _, err := sb.Ls(ctx, "/"); return err },
			"Glob":    func() error { _, err := sb.Glob(ctx, "*", "/"); return err },
			"Stat":    func() error { _, err := sb.Stat(ctx, f); return err },
			"Upload": func() error {
				_, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: f, Content: []byte("z")}})
				return err
			},
			"Download": func() error { _, err := sb.DownloadFiles(ctx, []string{f}); return err },
			"Command":  func() error { return sb.Command(ctx, "true").Start() },
		}
		for name, call := range calls {
			err := call()
			assert.ErrorIs(t, err, sandbox.ErrPaused, name)
			assert.False(t, errors.Is(err, sandbox.ErrGone), name)
		}
		assert.Less(t, time.Since(start), 5*time.Second, "calls on a paused sandbox fail at once")
		require.NoError(t, sb.Resume(ctx))
		require.NoError(t, sb.Resume(ctx), "a second Resume")
		assert.Equal(t, "x", mustSh(t, sb, "cat "+f))
	})
}

// TestPausedFromOutside: a call on a sandbox paused by another handle is
// ErrPaused too (the engine says so), Attach finds it paused, and any
// handle resumes it.
func TestPausedFromOutside(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	mustSh(t, sb, "true")
	other, err := sandbox.Attach(ctx, sb.ID(), sandbox.WithClientOptions(client.FromEnv))
	require.NoError(t, err)
	defer other.Detach()
	require.NoError(t, other.Pause(ctx))
	_, err = sb.Execute(ctx, "true", sandbox.ExecTimeout(30*time.Second))
	assert.ErrorIs(t, err, sandbox.ErrPaused)
	third, err := sandbox.Attach(ctx, sb.ID(), onEngine()...)
	require.NoError(t, err)
	defer third.Detach()
	assert.True(t, third.Paused())
	require.NoError(t, sb.Resume(ctx), "a handle that did not pause it resumes it")
	assert.Equal(t, "running", engineState(t, sb.ID()))
	assert.Equal(t, "ok", mustSh(t, sb, "echo ok"))
}

// TestAutoPause: WithAutoPause pauses an idle sandbox, never one with a
// call running, and the next call resumes it; WithAutoResume resumes one
// paused by hand.
func TestAutoPause(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		waitPaused := func(want bool) {
			t.Helper()
			require.Eventually(t, func() bool { return sb.Paused() == want }, 10*time.Second, 20*time.Millisecond)
			want2 := map[bool]string{true: "paused", false: "running"}[want]
			require.Equal(t, want2, engineState(t, sb.ID()))
		}
		waitPaused(true) // idle since New
		assert.Equal(t, "hi", mustSh(t, sb, "echo hi"), "the call resumes it")
		waitPaused(true)
		// A command running longer than the idle time keeps it running.
		res, err := sb.Execute(ctx, "sleep 2; echo done")
		require.NoError(t, err)
		assert.Equal(t, "done\n", res.Output)
		waitPaused(true)
	}, sandbox.WithAutoPause(500*time.Millisecond))

	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithAutoResume())
	ctx := testCtx(t)
	require.NoError(t, sb.Pause(ctx))
	assert.Equal(t, "hi", mustSh(t, sb, "echo hi"))
	assert.False(t, sb.Paused())
	assert.Equal(t, "running", engineState(t, sb.ID()))
}

// TestClosePaused: Close of a paused sandbox removes it within its bound;
// with WithAutoRemove(false) it leaves it stopped.
func TestClosePaused(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			ctx := testCtx(t)
			sb, err := sandbox.New(ctx, sandboxOptions(image)...)
			require.NoError(t, err)
			c, _ := counter(t, sb, "/tmp/n", "/tmp/stop", false)
			require.NoError(t, sb.Pause(ctx))
			start := time.Now()
			require.NoError(t, sb.Close())
			assert.Less(t, time.Since(start), 30*time.Second)
			t.Logf("Close of a paused sandbox: %v", time.Since(start))
			assert.Contains(t, strings.ToLower(engineState(t, sb.ID())), "no such container")
			assert.Error(t, c.Wait())

			kept, err := sandbox.New(ctx, sandboxOptions(image, sandbox.WithAutoRemove(false))...)
			require.NoError(t, err)
			defer removeContainer(t, kept.ID())
			require.NoError(t, kept.Pause(ctx))
			require.NoError(t, kept.Close())
			assert.Equal(t, "exited", engineState(t, kept.ID()))
		})
	}
}

// removeContainer removes a container a test left stopped.
func removeContainer(t testing.TB, id string) {
	t.Helper()
	if err := removeBox(t, id); err != nil {
		t.Errorf("remove %s: %v", id, err)
	}
}

// TestPrunePaused: a paused sandbox whose owner let it go (neither clock
// ends it: its helper is frozen) is removed by Prune.
func TestPrunePaused(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	ctx := testCtx(t)
	owner := "test-prune-paused-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithOwner(owner), sandbox.WithIdleTimeout(time.Second))...)
	require.NoError(t, err)
	defer removeContainer(t, sb.ID())
	require.NoError(t, sb.Pause(ctx))
	sb.Detach()
	time.Sleep(2 * time.Second) // past the idle timeout: the frozen helper ends nothing
	require.Equal(t, "paused", engineState(t, sb.ID()))
	removed, err := sandbox.Prune(ctx, sandbox.Filter{Owner: owner}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{sb.ID()}, removed)
	require.Eventually(t, func() bool {
		return strings.Contains(strings.ToLower(engineState(t, sb.ID())), "no such container")
	}, 30*time.Second, 100*time.Millisecond)
}
