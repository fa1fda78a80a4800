//go:build linux

package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close while the daemon is down fails at once with ErrDaemonUnreachable
// (not a missing file), and can be retried: once the daemon is back, Close
// removes the container; then it is final. Concurrent Closes share one
// attempt. List, Prune and Attach say ErrDaemonUnreachable too.
func TestCloseRetry(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	sb := d.newSandbox(t, ctx)
	id := sb.ID()
	d.stop()

	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- sb.Close() }()
	}
	for range 3 {
		err := within(t, errs, "Close while the daemon is down")
		assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable)
		assert.NotErrorIs(t, err, fs.ErrNotExist, "a missing socket is not a missing file")
	}
	_, err := sb.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrClosed, "the sandbox is closed all the same")
	host := sandbox.WithClientOptions(client.WithHost(d.host))
	_, err = sandbox.List(ctx, sandbox.Filter{}, host)
	assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable, "List")
	_, err = sandbox.Prune(ctx, sandbox.Filter{All: true}, host)
	assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable, "Prune")
	_, err = sandbox.Attach(ctx, id, sandbox.WithClientOptions(client.WithHost(d.host)))
	assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable, "Attach")
	assert.NotErrorIs(t, err, fs.ErrNotExist, "Attach")

	d.start()
	require.NotEqual(t, container.ContainerState(""), state(t, d.cli, id), "the failed Close left the container")
	require.NoError(t, sb.Close(), "Close again, the daemon back")
	assert.Equal(t, container.ContainerState(""), state(t, d.cli, id))
	d.stop()
	assert.NoError(t, sb.Close(), "a successful Close is final")
}

// Close against a frozen daemon (SIGSTOP: connections accepted, nothing
// answered) returns by its bound with ErrDaemonUnreachable; once the
// daemon thaws, Close again removes the container.
func TestCloseFrozenDaemon(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	sb := d.newSandbox(t, ctx)
	const bound = 3 * time.Second
	testhook.SetCloseBound(sb, bound)
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGSTOP))
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = d.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)

	start := time.Now()
	err := within(t, async(sb.Close), "Close on a frozen daemon")
	elapsed := time.Since(start)
	t.Logf("Close on a frozen daemon: %v after %v", err, elapsed)
	assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable)
	assert.Less(t, elapsed, bound+2*time.Second)
	thaw()
	// The thawed daemon works off what queued meanwhile: the second Close
	// has Close's own bound (a 3 s one ran out at a load of 16).
	testhook.SetCloseBound(sb, 0)
	require.NoError(t, sb.Close())
	assert.Equal(t, container.ContainerState(""), state(t, d.cli, sb.ID()))
}

// bigTreeFiles is how many files TestCloseLargeSandbox makes:
// DOCKERSANDBOX_TEST_FILES, else 100000 (the removal of which takes well
// over the test's close bound, while a million take minutes to make).
func bigTreeFiles(t *testing.T) int {
	if v := os.Getenv("DOCKERSANDBOX_TEST_FILES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "DOCKERSANDBOX_TEST_FILES")
		return n
	}
	return 100000
}

// Close of a sandbox whose removal outlasts Close's bound (many files in
// its writable layer) says ErrStillRemoving: the daemon goes on removing
// it (removal is not tied to the request); Close again waits for that and
// succeeds, the container gone. With DOCKERSANDBOX_TEST_FILES=1000000 and
// DOCKERSANDBOX_TEST_CLOSE_BOUND=30s, it plays the full case. Not
// parallel: half its 3 s bound is for the daemon's kill and the start of
// the removal, which other tests' containers delay (seen: the state still
// "exited" at the bound).
func TestCloseLargeSandbox(t *testing.T) {
	testenv.RequireDocker(t, "whether a removal outlives its request is Docker's behaviour (a pod's deletion is the kubelet's, asynchronous)")
	skipInShort(t)
	if testenv.Podman(t) {
		t.Skip("Podman: whether a removal outlives its request is Docker's behaviour (moby's ContainerRm takes no context)")
	}
	if secure {
		t.Skip("the secure profile keeps the working dir in memory (tmpfs): its removal is quick")
	}
	n := bigTreeFiles(t)
	bound := 3 * time.Second // half of it for the kill and the removal's start
	if v := os.Getenv("DOCKERSANDBOX_TEST_CLOSE_BOUND"); v != "" {
		var err error
		bound, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithNetworkMode("none"))
	start := time.Now()
	mkCtx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a million files take minutes
	defer cancel()
	res, err := sb.Execute(mkCtx, fmt.Sprintf("mkdir /many && cd /many && seq 1 %d | xargs touch && ls | wc -l", n), sandbox.ExecTimeout(0))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintln(n), res.Output)
	t.Logf("%d files made in %v", n, time.Since(start))

	testhook.SetCloseBound(sb, bound)
	start = time.Now()
	err = sb.Close()
	t.Logf("Close with a %v bound: %v after %v", bound, err, time.Since(start))
	assert.Less(t, time.Since(start), bound+2*time.Second, "Close keeps its bound")
	if err == nil {
		assert.Equal(t, container.ContainerState(""), state(t, testenv.Client(t), sb.ID()))
		t.Skipf("the daemon removed %d files within %v: the case is not played (raise DOCKERSANDBOX_TEST_FILES)", n, bound)
	}
	if !errors.Is(err, sandbox.ErrStillRemoving) && strings.Contains(err.Error(), `(state "exited")`) {
		// The daemon had not begun the removal at the bound (seen at a load
		// of 30): Close says so, and Close again removes it.
		require.NoError(t, closeUntilGone(t, sb))
		t.Skipf("the daemon had not begun removing within %v (a loaded machine): the case is not played", bound)
	}
	require.ErrorIs(t, err, sandbox.ErrStillRemoving, "the removal of %d files takes longer than %v", n, bound)
	assert.NotErrorIs(t, err, sandbox.ErrDaemonUnreachable)

	require.NoError(t, closeUntilGone(t, sb))
	assert.Equal(t, container.ContainerState(""), state(t, testenv.Client(t), sb.ID()))
	assert.NoError(t, sb.Close())
}

// closeUntilGone closes sb with Close's default bound again while it says
// ErrStillRemoving (30 minutes at most), and returns the last error.
func closeUntilGone(t *testing.T, sb *sandbox.Sandbox) error {
	testhook.SetCloseBound(sb, 0) // the default: 30 s
	start := time.Now()
	var err error
	for {
		err = sb.Close()
		if !errors.Is(err, sandbox.ErrStillRemoving) || time.Since(start) > 30*time.Minute {
			break
		}
		t.Logf("still removing after %v", time.Since(start))
	}
	t.Logf("Close again: %v after %v", err, time.Since(start))
	return err
}
