package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/require"
)

// readUntil follows p's output from 0 until it contains want, within d.
func readUntil(t *testing.T, p *sandbox.Process, want string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), d)
	defer cancel()
	var got []byte
	var cursor int64
	for {
		out, err := p.Read(ctx, cursor, sandbox.OutputWait(time.Second))
		require.NoError(t, err, "output so far: %q", got)
		got, cursor = append(got, out.Data...), out.Next
		if bytes.Contains(got, []byte(want)) {
			return string(got)
		}
		require.False(t, out.Done, "the output ended without %q: %q", want, got)
	}
}

// TestProcessBasics: a background server runs and is listed; output is
// read from a cursor and followed; stdin round trips; Wait reports the
// exit; finished and unknown processes give typed errors.
func TestProcessBasics(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		t.Run("server", func(t *testing.T) {
			mustSh(t, sb, `mkdir -p /tmp/www && echo hello-from-server > /tmp/www/index.html`)
			p, err := sb.StartProcess(ctx, `echo listening; if command -v python3 >/dev/null; then exec python3 -m http.server -d /tmp/www 8123; else exec httpd -f -h /tmp/www -p 127.0.0.1:8123; fi`)
			require.NoError(t, err)
			readUntil(t, p, "listening\n", 10*time.Second)
			require.Eventually(t, func() bool {
				res, err := sb.Execute(ctx, `if command -v python3 >/dev/null; then python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8123/").read().decode())'; else wget -qO- http://127.0.0.1:8123/; fi`)
				return err == nil && strings.Contains(res.Output, "hello-from-server")
			}, 20*time.Second, 100*time.Millisecond, "the server answers")
			info, err := p.Info(ctx)
			require.NoError(t, err)
			require.Equal(t, sandbox.ProcessRunning, info.State)
			require.True(t, info.Running())
			require.False(t, info.Started.IsZero())
			list, err := sb.Processes(ctx)
			require.NoError(t, err)
			found := false
			for _, i := range list {
				found = found || i.ID == p.ID()
			}
			require.True(t, found, "Processes lists %s", p.ID())
			require.NoError(t, p.Kill(ctx))
			info, err = p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, sandbox.ProcessExited, info.State)
			require.Equal(t, syscall.SIGKILL, info.Signal)
			require.Equal(t, 137, info.ExitCode)
		})
		t.Run("stdin", func(t *testing.T) {
			p, err := sb.StartProcess(ctx, `while read line; do echo "got $line"; done; echo bye`)
			require.NoError(t, err)
			n, err := p.Write(ctx, []byte("one\ntwo\n"))
			require.NoError(t, err)
			require.Equal(t, 8, n)
			readUntil(t, p, "got two\n", 10*time.Second)
			require.NoError(t, p.CloseStdin(ctx))
			info, err := p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, 0, info.ExitCode)
			var buf bytes.Buffer
			next, err := p.Follow(ctx, 0, &buf)
			require.NoError(t, err)
			require.Equal(t, "got one\ngot two\nbye\n", buf.String())
			require.EqualValues(t, buf.Len(), next)
			// Finished: typed errors.
			_, err = p.Write(ctx, []byte("x"))
			require.ErrorIs(t, err, sandbox.ErrProcessDone)
			require.ErrorIs(t, p.Signal(ctx, syscall.SIGTERM), sandbox.ErrProcessDone)
			require.ErrorIs(t, p.Kill(ctx), sandbox.ErrProcessDone)
			// A cursor beyond the end is refused, a read at the end is empty and done.
			_, err = p.Read(ctx, next+1)
			require.Error(t, err)
			out, err := p.Read(ctx, next)
			require.NoError(t, err)
			require.Empty(t, out.Data)
			require.True(t, out.Done)
		})
		t.Run("stdin closed", func(t *testing.T) {
			p, err := sb.StartProcess(ctx, `exec sleep 600`)
			require.NoError(t, err)
			require.NoError(t, p.CloseStdin(ctx))
			_, err = p.Write(ctx, []byte("x"))
			require.ErrorIs(t, err, sandbox.ErrStdinClosed)
			require.ErrorIs(t, p.CloseStdin(ctx), sandbox.ErrStdinClosed)
			require.NoError(t, p.Kill(ctx))
		})
		t.Run("exit code and env", func(t *testing.T) {
			p, err := sb.StartProcess(ctx, `echo "$FOO $(pwd)"; exit 3`, sandbox.ProcessEnv("FOO=bar"), sandbox.ProcessDir("/tmp"))
			require.NoError(t, err)
			info, err := p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, info.ExitCode)
			require.Zero(t, info.Signal)
			out, err := p.Read(ctx, 0)
			require.NoError(t, err)
			require.Equal(t, "bar /tmp\n", string(out.Data))
		})
		t.Run("unknown", func(t *testing.T) {
			_, err := sb.Process(ctx, "0123456789abcdef")
			require.ErrorIs(t, err, sandbox.ErrProcessNotFound)
			_, err = sb.Process(ctx, "")
			require.ErrorIs(t, err, sandbox.ErrProcessNotFound)
		})
		t.Run("signal", func(t *testing.T) {
			p, err := sb.StartProcess(ctx, `trap 'echo term; exit 7' TERM; echo ready; while :; do sleep 0.1; done`)
			require.NoError(t, err)
			readUntil(t, p, "ready\n", 10*time.Second)
			require.NoError(t, p.Signal(ctx, syscall.SIGTERM))
			info, err := p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, 7, info.ExitCode)
			readUntil(t, p, "term\n", 10*time.Second)
		})
	})
}

// TestProcessTreeKill: Kill ends everything the process started, also
// grandchildren in new sessions whose parent exited (a double fork).
func TestProcessTreeKill(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		p, err := sb.StartProcess(ctx, `(setsid sh -c 'sleep 1001 & sleep 1002' &) ; setsid sleep 1003 & sleep 1004 & echo started; wait`)
		require.NoError(t, err)
		readUntil(t, p, "started\n", 10*time.Second)
		require.Eventually(t, func() bool {
			return strings.Count(psArgs(t, sb), "sleep 100") >= 4
		}, 10*time.Second, 50*time.Millisecond)
		require.NoError(t, p.Kill(ctx))
		info, err := p.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, sandbox.ProcessExited, info.State)
		// Kill returns once they are dead (a zombie has no command line).
		require.NotContains(t, psArgs(t, sb), "sleep 100", "a process of the tree survived Kill")
	})
}

// TestProcessErrorsTyped: bad options are refused before anything runs.
func TestProcessErrorsTyped(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, images[0])
	ctx := testCtx(t)
	_, err := sb.StartProcess(ctx, "")
	require.ErrorIs(t, err, sandbox.ErrEmptyCommand)
	_, err = sb.StartProcess(ctx, "true", sandbox.ProcessLogSize(1))
	require.Error(t, err)
	_, err = sb.StartProcess(ctx, "true", sandbox.ProcessTTY(0, 80))
	require.Error(t, err)
	_, err = sb.StartProcess(ctx, "true", sandbox.ProcessDir("/nonexistent"))
	require.Error(t, err)
	p, err := sb.StartProcess(ctx, "exit 0")
	require.NoError(t, err)
	_, err = p.Read(ctx, 0, sandbox.OutputMax(0))
	require.Error(t, err)
	require.False(t, errors.Is(err, sandbox.ErrProcessNotFound))
}

// psArgs lists the command lines of the sandbox's processes (busybox and
// Debian alike: the Debian image has no ps).
func psArgs(t testing.TB, sb *sandbox.Sandbox) string {
	t.Helper()
	return mustSh(t, sb, `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done`)
}

// Wait returns once the process's output is in its log, as exec.Cmd's
// Wait does: a Read right after it sees everything (Podman's CI saw an
// empty log after Wait when the exit outran the output).
func TestProcessWaitHasOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, images[0])
	ctx := testCtx(t)
	for i := range 30 {
		p, err := sb.StartProcess(ctx, fmt.Sprintf("echo line-%d; exit 3", i))
		require.NoError(t, err)
		info, err := p.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, info.ExitCode)
		out, err := p.Read(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("line-%d\n", i), string(out.Data), "run %d", i)
	}
}
