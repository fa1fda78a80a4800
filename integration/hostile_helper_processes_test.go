//go:build linux

package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A helper that lies about processes (internal/testenv/hostilehelper's
// proc-* modes) cannot make a process call hang past its deadline or grow
// the host's memory: a read of 64 MiB, a read from before its cursor, a
// list of 1,025 processes (one more than a table holds), an answer about
// another process are ErrHelper; an old helper is ErrProtocolVersion; a
// helper that never lets a process finish holds Wait and Follow only until
// their context ends.
func TestHostileHelperProcesses(t *testing.T) {
	skipInShort(t)
	t.Parallel()
	skipReplacedHelperOnPodman(t)
	cli := testenv.BackdoorClient(t)
	helper := toolBinary(t, "internal/testenv/hostilehelper")
	caller := testenv.BuildTool(t, "..", "internal/testenv/hostilecall")
	modes := []string{"proc-flood-read", "proc-bad-cursor", "proc-big-list", "proc-never-done", "proc-unknown", "proc-other-id"}
	stalls := engineStalls(t)
	concurrently(t, modes, func(m string) string { return m }, func(t *testing.T, mode string) {
		sb := hostileSandbox(t, cli, testenv.BusyboxImage)
		installHostile(t, cli, sb.ID(), helper, mode)
		callWithin := func(deadline time.Duration, what string, fn func(ctx context.Context) error) error {
			bound := deadline + time.Second + hostileSlack
			var err error
			r := runTimed(bound, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				err = fn(ctx)
				return err
			})
			r.within(t, what, bound)
			return err
		}
		call := func(what string, fn func(ctx context.Context) error) error {
			return callWithin(hostileDeadline, what, fn)
		}
		var p *sandbox.Process
		// The first call also opens the sandbox's channel (an engine exec
		// and the hello), which takes seconds on busy cores: its deadline
		// is an exec's handshake, not the 3 s of the calls that follow.
		err := callWithin(noDeadlineExec, "Start", func(ctx context.Context) (err error) {
			p, err = sb.StartProcess(ctx, "true")
			return err
		})
		if mode == "proc-unknown" {
			require.ErrorIs(t, err, sandbox.ErrProtocolVersion)
			return
		}
		require.NoError(t, err)
		switch mode {
		case "proc-flood-read", "proc-bad-cursor":
			// The lie must be caught, not outwaited: a deadline of an
			// exec's handshake, which a loaded machine's delivery of the
			// first MiB stays well within (at 3 s it once did not).
			err = callWithin(noDeadlineExec, "Read", func(ctx context.Context) error { _, err := p.Read(ctx, 10); return err })
			assert.ErrorIs(t, err, sandbox.ErrHelper)
			// Its host memory, in a process of its own (this one's peak
			// counts the parallel tests' allocations): a start and the
			// lying read, under the same bound.
			checkMemCase(t, caller, sb.ID(), memCase{mode: mode, op: "proc-read", shared: true}, stalls)
			// The lie broke the shared channel: Follow opens a new one,
			// an exec's handshake again.
			err = callWithin(noDeadlineExec, "Follow", func(ctx context.Context) error { _, err := p.Follow(ctx, 10, &bytes.Buffer{}); return err })
			assert.ErrorIs(t, err, sandbox.ErrHelper)
		case "proc-other-id":
			err = call("Info", func(ctx context.Context) error { _, err := p.Info(ctx); return err })
			assert.ErrorIs(t, err, sandbox.ErrHelper)
			assert.NotErrorIs(t, err, sandbox.ErrProcessNotFound, "a lie is not a missing process")
			// As Follow above: the lie broke the channel.
			err = callWithin(noDeadlineExec, "Wait", func(ctx context.Context) error { _, err := p.Wait(ctx); return err })
			assert.ErrorIs(t, err, sandbox.ErrHelper)
		case "proc-big-list":
			// The lie must be caught, not outwaited; its answer crosses
			// the daemon beside proc-flood-read's 64 MiB, which held it
			// past 3 s once in CI (8-200 ms alone): an exec's deadline.
			err = callWithin(noDeadlineExec, "Processes", func(ctx context.Context) error { _, err := sb.Processes(ctx); return err })
			assert.ErrorIs(t, err, sandbox.ErrHelper)
		case "proc-never-done":
			err = call("Wait", func(ctx context.Context) error { _, err := p.Wait(ctx); return err })
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			err = call("Follow", func(ctx context.Context) error { _, err := p.Follow(ctx, 0, &bytes.Buffer{}); return err })
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			err = call("Read with wait", func(ctx context.Context) error {
				_, err := p.Read(ctx, 0, sandbox.OutputWait(time.Hour))
				return err
			})
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		}
	})
}

// A helper that lies about a capture (a file above its cap, a 64 KiB
// tail) fails the Execute with ErrHelper; nothing of the lie reaches the
// caller.
func TestHostileHelperCapture(t *testing.T) {
	skipInShort(t)
	t.Parallel()
	skipReplacedHelperOnPodman(t)
	cli := testenv.BackdoorClient(t)
	helper := toolBinary(t, "internal/testenv/hostilehelper")
	sb := hostileSandbox(t, cli, testenv.BusyboxImage)
	installHostile(t, cli, sb.ID(), helper, "lie-capture")
	var resp sandbox.ExecuteResponse
	r := runTimed(noDeadlineBound, func() (err error) {
		resp, err = sb.Execute(context.Background(), "echo hi", sandbox.ExecCapture("/tmp/out", 1<<20))
		return err
	})
	r.within(t, "Execute with a capture", noDeadlineBound)
	assert.ErrorIs(t, r.err, sandbox.ErrHelper)
	assert.Nil(t, resp.Capture)
}
