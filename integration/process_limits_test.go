package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestProcessTableLimit: the table holds 1024 processes; a start beyond
// forgets the oldest exited one, and with 1024 running is
// ErrTooManyProcesses.
func TestProcessTableLimit(t *testing.T) {
	skipInShort(t)
	if secure {
		t.Skip("1024 running processes exceed the secure profile's pids limit (512)")
	}
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	// 1025 starts: a minute was not enough at load 20 (each start forks).
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	first, err := sb.StartProcess(ctx, "exit 0")
	require.NoError(t, err)
	_, err = first.Wait(ctx)
	require.NoError(t, err)
	for i := range 1023 {
		_, err := sb.StartProcess(ctx, "exec sleep 600")
		require.NoError(t, err, "process %d", i+2)
	}
	_, err = sb.StartProcess(ctx, "exec sleep 600") // the 1025th: the exited one goes
	require.NoError(t, err)
	_, err = sb.Process(ctx, first.ID())
	require.ErrorIs(t, err, sandbox.ErrProcessNotFound)
	list, err := sb.Processes(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1024)
	_, err = sb.StartProcess(ctx, "exec sleep 600")
	require.ErrorIs(t, err, sandbox.ErrTooManyProcesses)
}

// TestProcessAfterRestart: a stopped and restarted sandbox has a new PID 1
// and an empty table: an old ID is ErrProcessNotFound, new processes run.
func TestProcessAfterRestart(t *testing.T) {
	requireStopper(t)
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	p, err := sb.StartProcess(ctx, "exec sleep 600")
	require.NoError(t, err)
	require.NoError(t, sb.Stop(ctx))
	require.NoError(t, sb.Restart(ctx))
	_, err = sb.Process(ctx, p.ID())
	require.ErrorIs(t, err, sandbox.ErrProcessNotFound)
	_, err = p.Info(ctx)
	require.ErrorIs(t, err, sandbox.ErrProcessNotFound)
	q, err := sb.StartProcess(ctx, "echo again")
	require.NoError(t, err)
	info, err := q.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, info.ExitCode)
	list, err := sb.Processes(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1, fmt.Sprint(list))
}

// TestProcessDirNotEntered: StartProcess does not wait for the exec; a directory
// the sandbox's user may not enter ends the process with status 127 and
// the reason in its output.
func TestProcessDirNotEntered(t *testing.T) {
	requireExecAs(t)
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithUser("65534:65534"))
	ctx := testCtx(t)
	mustSh(t, sb, "mkdir -p /tmp/locked && chmod 700 /tmp/locked", sandbox.ExecUser("0"))
	p, err := sb.StartProcess(ctx, "echo never", sandbox.ProcessDir("/tmp/locked"))
	require.NoError(t, err)
	info, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 127, info.ExitCode)
	out, err := p.Read(ctx, 0)
	require.NoError(t, err)
	require.Contains(t, string(out.Data), "permission denied")
	require.NotContains(t, string(out.Data), "never")
}

// TestProcessLaunchersAttacked: the launchers PID 1 keeps ahead, killed or
// stopped by a command of the sandbox, are replaced: the next StartProcess works.
func TestProcessLaunchersAttacked(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	for _, sig := range []string{"STOP", "KILL"} {
		p, err := sb.StartProcess(ctx, "exit 0")
		require.NoError(t, err)
		_, err = p.Wait(ctx)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond) // the launchers are started ahead meanwhile
		// (The pattern is built so that this shell's own command line does not match it.)
		n := mustSh(t, sb, `m=procex; m="helper ${m}ec"; n=0; for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in *"$m"*) kill -`+sig+` ${p#/proc/} && n=$((n+1));; esac; done; echo $n`)
		require.NotEqual(t, "0", n, "launchers to attack")
		q, err := sb.StartProcess(ctx, "echo fine")
		require.NoError(t, err, "after SIG%s of the launchers", sig)
		info, err := q.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, info.ExitCode)
		out, err := q.Read(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, "fine\n", string(out.Data))
	}
}
