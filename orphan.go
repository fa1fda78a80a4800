package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// A command must not outlive its call. The helper serving a request kills
// the command's tree on timeout, on cancel and when its connection drops;
// but a helper that is itself killed or stopped from inside the sandbox
// (pkill, kill -STOP) can do none of that. So the helper tells the library
// which process runs each command (proto.Started), and when a call ends
// without a result the library kills that tree through another helper
// (proto.OpKill), and checks that the shared channel still answers.

// killTimeout bounds the exec that kills an orphaned command.
const killTimeout = 5 * time.Second

// stallTimeout is how long the shared channel has to answer a check
// before it is declared stalled and dropped.
const stallTimeout = 5 * time.Second

// timeoutBackstop is how long past a command's timeout the library waits
// for the helper to report it, before it kills the command itself.
const timeoutBackstop = 5 * time.Second

var (
	errChannelStalled = fmt.Errorf("%w: the shared channel stopped answering", ErrHelper)
	errTimeoutMissed  = fmt.Errorf("%w: the helper missed the command's timeout", ErrHelper)
)

// startedProc records the process that runs a call's command.
type startedProc struct{ p atomic.Pointer[proto.Started] }

// record keeps the Started frame's payload; a malformed one is ignored (the
// command is then only killed by its own helper).
func (sp *startedProc) record(payload []byte) {
	var st proto.Started
	if json.Unmarshal(payload, &st) == nil && st.Pid > 1 && st.Start > 0 {
		sp.p.Store(&st)
	}
}

// started returns the command's process, or nil when none started.
func (sp *startedProc) started() *proto.Started { return sp.p.Load() }

// await waits for p's result. When none came (the helper died, lost its
// connection, or did not confirm a cancel), the command p started may
// still run: it is killed through an exec of its own, as user.
func (s *DockerSandbox) await(p pending, user string) (*proto.Result, error) {
	res, err := p.wait()
	if res == nil && err != nil {
		if st := p.started(); st != nil {
			s.killCommand(st, user)
		}
	}
	return res, err
}

// killCommand kills the process tree of st, if it still runs. It fails
// quietly: the sandbox may be closed or gone, and the caller already has
// an error to report.
func (s *DockerSandbox) killCommand(st *proto.Started, user string) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if p, err := s.startExec(ctx, proto.Request{Op: proto.OpKill, Pid: st.Pid, Start: st.Start}, callOptions{user: user}); err == nil {
		_, _ = p.wait()
	}
}

// check makes sure the channel still answers, after a cancel it did not
// confirm: its helper may have been stopped, and every request on it would
// wait for ever. It sends a trivial request; without an answer within
// stallTimeout the channel is dropped (its pending calls fail, and kill
// their commands through other helpers). Meanwhile the channel takes no
// new requests. One check runs at a time.
func (ch *channel) check() {
	if !ch.checking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer ch.checking.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
		defer cancel()
		c, err := ch.start(ctx, proto.Request{Op: proto.OpStat, Paths: []string{"/"}}, callOptions{})
		if err != nil {
			return // broken already
		}
		select {
		case <-c.result:
		case <-ch.done:
		case <-ctx.Done():
			ch.breakWith(errChannelStalled)
		}
	}()
}
