//go:build linux

package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// portsDirOf returns the host directory of sb's port socket, from its label.
func portsDirOf(t *testing.T, id string) string {
	t.Helper()
	res, err := testenv.Client(t).ContainerInspect(testCtx(t), id, client.ContainerInspectOptions{})
	require.NoError(t, err)
	return res.Container.Config.Labels[testhook.LabelPortsDir]
}

// requirePortDirSwept checks that New removes dir, the port socket
// directory of a program killed without Close (its socket left dead), once
// it is older than the sweep's minimum age (a minute: made older here).
// An empty dir (no port socket: the daemon is elsewhere) checks nothing
// but still makes the sandbox whose New sweeps.
func requirePortDirSwept(t *testing.T, dir string) {
	t.Helper()
	if dir != "" {
		require.DirExists(t, dir, "the killed program leaves its port socket directory")
		old := time.Now().Add(-2 * time.Minute)
		require.NoError(t, os.Chtimes(filepath.Join(dir, "s", "ports.sock"), old, old))
	}
	newSandbox(t, testenv.BusyboxImage) // sweeps
	if dir != "" {
		assert.NoDirExists(t, dir, "New removed the dead port socket's directory")
	}
}

func requirePortSocket(t *testing.T) {
	t.Helper()
	if !testenv.LocalDaemon() {
		t.Skip("the port socket needs a daemon on this machine (a unix socket)")
	}
}

// portsFlood, run as root in the sandbox, floods the port socket for
// seconds: connections that say nothing, that send a wrong token, that
// send endless garbage; up to 3000 held open at once.
const portsFlood = `import os, socket, sys, time
end = time.time() + float(sys.argv[1])
held, i = [], 0
while time.time() < end:
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(False)
    try:
        s.connect("/run/dockersandbox/ports.sock")
        if i % 3 == 1:
            s.send(os.urandom(16))
        elif i % 3 == 2:
            s.send(os.urandom(65536))
    except OSError:
        pass
    held.append(s)
    i += 1
    if len(held) > 3000:
        held.pop(0).close()
print(i)
`

// TestPortSocketAttacked: root in the container cannot change the
// directory the library shares (it is read-only), and a flood of
// connections to the socket costs the host a bounded number of
// goroutines and descriptors while a Dial still works, and the socket
// serves Dial again afterwards.
func TestPortSocketAttacked(t *testing.T) {
	requirePortSocket(t)
	sb := newSandbox(t, testenv.DebianImage, sandbox.WithNetworkMode("none"))
	require.True(t, testhook.HasPortSocket(sb))
	dir := portsDirOf(t, sb.ID())
	require.NotEmpty(t, dir)
	startServer(t, sb, "echo", 7000, "")
	root := sandbox.ExecUser("root")

	t.Run("ReadOnly", func(t *testing.T) {
		shared := filepath.Join(dir, "s", "sandbox-helper") // the helper the container boots from and opens its channel with
		before, err := os.ReadFile(shared)
		require.NoError(t, err)
		for _, cmd := range []string{
			"touch /run/dockersandbox/sandbox-helper",
			"cp /bin/sh /run/dockersandbox/sandbox-helper",
			"chmod 0 /run/dockersandbox/sandbox-helper",
			"rm -f /run/dockersandbox/sandbox-helper",
			"touch /run/dockersandbox/planted",
			"ln -s / /run/dockersandbox/link",
			"rm -f /run/dockersandbox/ports.sock",
			"mv /run/dockersandbox/ports.sock /run/dockersandbox/moved",
			"mkdir /run/dockersandbox/d",
			"chmod 0 /run/dockersandbox/ports.sock",
			"umount /run/dockersandbox",
			"mount -t tmpfs none /run/dockersandbox",
			"mount -o remount,rw /run/dockersandbox",
		} {
			res, err := sb.Execute(testCtx(t), cmd+" 2>&1", root)
			require.NoError(t, err)
			assert.NotEqual(t, 0, res.ExitCode, "%s succeeded: %s", cmd, res.Output)
		}
		mustSh(t, sb, "test -S /run/dockersandbox/ports.sock")
		entries, err := os.ReadDir(filepath.Join(dir, "s"))
		require.NoError(t, err)
		require.Len(t, entries, 2)
		assert.Equal(t, "ports.sock", entries[0].Name())
		assert.Equal(t, "sandbox-helper", entries[1].Name())
		after, err := os.ReadFile(shared)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(before, after), "the shared helper changed")
		fi, err := os.Stat(filepath.Join(dir, "s", "ports.sock"))
		require.NoError(t, err)
		assert.Equal(t, os.ModeSocket, fi.Mode().Type())
		c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7000")
		require.NoError(t, err)
		defer c.Close()
		assert.True(t, testhook.ConnIsDirect(c))
	})

	t.Run("Flood", func(t *testing.T) {
		const seconds = 8
		mustWrite(t, sb, "/tmp/flood.py", portsFlood)
		baseG, baseFD := runtime.NumGoroutine(), openFDs(t)
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		flood := sb.Command(ctx, fmt.Sprintf("exec python3 /tmp/flood.py %d", seconds))
		flood.User = "root"
		var out bytes.Buffer
		flood.Stdout = &out
		require.NoError(t, flood.Start())
		start := time.Now()
		maxG, maxFD := 0, 0
		const slack = 40
		var dump bytes.Buffer
		dialed := make(chan error, 1)
		go func() {
			time.Sleep(2 * time.Second) // into the flood
			dialed <- echoThrough(sb, 1<<20)
		}()
		// The shared channel reopening during the flood: over the socket
		// if its connection gets in, else on an exec's stream after 4 s.
		type reopened struct {
			took time.Duration
			out  string
			err  error
		}
		reopen := make(chan reopened, 1)
		go func() {
			time.Sleep(3 * time.Second)
			killChannelHelper(t, sb)
			start := time.Now()
			res, err := sb.Execute(testCtx(t), "echo reopened")
			reopen <- reopened{time.Since(start), res.Output, err}
		}()
		var dialErr error
		gotDial := false
		for time.Since(start) < seconds*time.Second {
			maxG, maxFD = max(maxG, runtime.NumGoroutine()), max(maxFD, openFDs(t))
			if runtime.NumGoroutine() > baseG+testhook.MaxIntroductions+slack && dump.Len() == 0 {
				_ = pprof.Lookup("goroutine").WriteTo(&dump, 1) // what they are, for the failure
			}
			select {
			case dialErr = <-dialed:
				gotDial = true
			case <-time.After(50 * time.Millisecond):
			}
		}
		require.NoError(t, flood.Wait())
		t.Logf("flood: %s connections; goroutines %d → at most %d, descriptors %d → at most %d", bytes.TrimSpace(out.Bytes()), baseG, maxG, baseFD, maxFD)
		if !gotDial {
			dialErr = <-dialed
		}
		require.NoError(t, dialErr, "a Dial during the flood")
		r := <-reopen
		require.NoError(t, r.err, "a command that reopens the channel during the flood")
		assert.Equal(t, "reopened\n", r.out)
		assert.Less(t, r.took, 4*time.Second+10*time.Second, "the channel reopened during the flood (4 s for the socket, then an exec)")
		t.Logf("the channel reopened in %v during the flood; over the socket: %v", r.took, testhook.ChannelIsDirect(sb))
		assert.LessOrEqual(t, maxG-baseG, testhook.MaxIntroductions+slack, "host goroutines during the flood:\n%s", dump.String())
		assert.LessOrEqual(t, maxFD-baseFD, testhook.MaxIntroductions+slack, "host descriptors during the flood")

		// Afterwards the socket serves Dial again (the flood's last
		// introductions end within their bound).
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7000")
			require.NoError(t, err)
			direct := testhook.ConnIsDirect(c)
			c.Close()
			if direct {
				break
			}
			require.True(t, time.Now().Before(deadline), "Dial does not use the port socket again after the flood")
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// echoThrough sends n bytes through the echo server on port 7000 and
// checks what comes back.
func echoThrough(sb *sandbox.Sandbox, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000")
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	msg := bytes.Repeat([]byte("0123456789abcdef"), n/16)
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.(interface{ CloseWrite() error }).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if err := <-werr; err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("echo: %d bytes back, want %d", len(got), len(msg))
	}
	return nil
}

// openFDs counts the test process's open descriptors.
func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestPortSocketLifecycle: the socket's directory goes with the sandbox
// (Close, or after Detach the Close of a handle from Attach, or Prune),
// and stays while a detached sandbox may be restarted; a sandbox that
// Close only stops has none.
func TestPortSocketLifecycle(t *testing.T) {
	t.Parallel()
	requirePortSocket(t)
	exists := func(dir string) bool { _, err := os.Stat(dir); return err == nil }

	t.Run("Close", func(t *testing.T) {
		ctx := testCtx(t)
		sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithNetworkMode("none"))...)
		require.NoError(t, err)
		dir := portsDirOf(t, sb.ID())
		require.True(t, exists(dir), "the directory %q", dir)
		require.NoError(t, sb.Close())
		assert.False(t, exists(dir), "the directory %q stayed after Close", dir)
	})

	t.Run("DetachAttachRestart", func(t *testing.T) {
		ctx := testCtx(t)
		sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithNetworkMode("none"))...)
		require.NoError(t, err)
		dir := portsDirOf(t, sb.ID())
		sb.Detach()
		require.True(t, exists(dir), "the directory went with Detach: the container mounts it")
		other, err := sandbox.Attach(ctx, sb.ID())
		require.NoError(t, err)
		defer other.Close()
		assert.False(t, testhook.HasPortSocket(other))
		require.NoError(t, other.Stop(ctx))
		require.NoError(t, other.Restart(ctx)) // the mount's source is there
		mustSh(t, other, "test -d /run/dockersandbox")
		startServer(t, other, "echo", 7000, "") // Dial over the stream
		require.NoError(t, echoThrough(other, 64<<10))
		require.NoError(t, other.Close())
		assert.False(t, exists(dir), "the directory %q stayed after the attached handle's Close", dir)
	})

	t.Run("Prune", func(t *testing.T) {
		ctx := testCtx(t)
		label := map[string]string{"dockersandbox.test/ports": t.Name() + fmt.Sprint(time.Now().UnixNano())}
		sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithNetworkMode("none"), sandbox.WithLabels(label))...)
		require.NoError(t, err)
		dir := portsDirOf(t, sb.ID())
		sb.Detach()
		removed, err := sandbox.Prune(ctx, sandbox.Filter{Labels: label})
		require.NoError(t, err)
		require.Len(t, removed, 1)
		assert.False(t, exists(dir), "the directory %q stayed after Prune", dir)
	})

	t.Run("NoAutoRemove", func(t *testing.T) {
		ctx := testCtx(t)
		sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithNetworkMode("none"), sandbox.WithAutoRemove(false))...)
		require.NoError(t, err)
		assert.False(t, testhook.HasPortSocket(sb))
		assert.Empty(t, portsDirOf(t, sb.ID()))
		require.NoError(t, sb.Close())
		_, err = testenv.Client(t).ContainerRemove(ctx, sb.ID(), client.ContainerRemoveOptions{Force: true})
		require.NoError(t, err)
	})
}

// TestDirectDeadlineKept: a read deadline set on a direct Conn right after
// Dial holds even when the port socket's introduction of that connection
// is still finishing (its goroutine paused after the acknowledgement, as a
// loaded machine may pause it): an introduction that cleared its own
// deadline last erased the user's, and the Read waited forever.
func TestDirectDeadlineKept(t *testing.T) {
	t.Parallel()
	requirePortSocket(t)
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithNetworkMode("none"))
	require.True(t, testhook.HasPortSocket(sb))
	startServer(t, sb, "sink", 7001, "")
	// The pause ends after the deadline is set and before it passes.
	defer testhook.DelayAfterAck(300 * time.Millisecond)()

	c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7001")
	require.NoError(t, err)
	defer c.Close()
	require.True(t, testhook.ConnIsDirect(c), "over the port socket")
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(start.Add(time.Second)))
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		t.Logf("the Read ended after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		c.Close()
		<-done
		t.Fatal("the Read did not end within 5 s (its deadline: 1 s): the deadline was lost")
	}
}
