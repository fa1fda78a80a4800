package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// A command must not outlive its call. The helper serving a request kills
// the command's tree on timeout, on cancel and when its connection drops;
// but a helper that is itself killed or stopped from inside the sandbox
// (kill $PPID, kill -STOP) can do none of that. Every helper leads a
// session, which the commands it starts share; when a call ends without a
// result, the library has another helper kill the running commands of that
// session (proto.OpKill). A helper with requests running says it is alive
// every proto.AliveInterval, so that a stopped one is noticed, and the
// library enforces a command's timeout itself when the helper misses it.

// killTimeout bounds the exec that kills a lost helper's commands.
const killTimeout = 5 * time.Second

// stallTimeout is how long the shared channel may stay silent with
// requests pending, and then how long it has to answer a check, before it
// is dropped as stalled.
const stallTimeout = 5 * time.Second

// silenceLimit is how long a helper serving a request on an exec of its
// own may send nothing before the call gives it up as stopped.
const silenceLimit = 10 * time.Second

// timeoutBackstop is how long past a command's timeout the library waits
// for the helper to report it, before it ends the call itself.
const timeoutBackstop = 3 * time.Second

// handshakeTimeout bounds the start of a helper exec (exec create, attach,
// hello), whatever the caller's context says: the daemon or a helper
// replaced from inside the sandbox may never answer. Generous: with 50
// sandboxes starting at once on 2 loaded cores, healthy starts took over 10 s.
const handshakeTimeout = 30 * time.Second

// opBound bounds a request other than exec when its context has no
// deadline: a helper can say it is alive for ever without answering.
const opBound = 20 * time.Second

// opBoundRate is the rate (bytes per second) at which a request's input
// adds to opBound: a large write may take longer.
const opBoundRate = 10 << 20

var (
	errDaemonSilent   = fmt.Errorf("%w: no answer within %v", ErrDaemonUnreachable, handshakeTimeout)
	errHelperNoHello  = fmt.Errorf("%w: the helper did not start within %v", ErrHelper, handshakeTimeout)
	errOpBound        = fmt.Errorf("%w: no answer within %v", ErrHelper, opBound)
	errHelperLied     = fmt.Errorf("%w: the helper broke the protocol", ErrHelper)
	errChannelStalled = fmt.Errorf("%w: the shared channel stopped answering", ErrHelper)
	errTimeoutMissed  = fmt.Errorf("%w: the helper missed the command's timeout", ErrHelper)
	errHelperSilent   = fmt.Errorf("%w: the helper stopped answering", ErrHelper)
)

// await waits for p's result. When none came (the helper died, stopped, or
// did not confirm a cancel), the commands of p's helper may still run: p
// makes sure they do not, before await returns, unless the caller's
// context ends first: the call then returns at once and they are killed in
// the background (within killTimeout, or stallTimeout for the shared
// channel).
// A request other than exec starts no command: its helper is dealt with in
// the background.
func (s *DockerSandbox) await(p pending) (*proto.Result, error) {
	res, err := p.wait()
	if res == nil && err != nil {
		ctx := p.context()
		if p.operation() != proto.OpExec || ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrHelper) {
			go p.lost()
		} else {
			lost := make(chan struct{})
			go func() {
				p.lost()
				close(lost)
			}()
			select {
			case <-lost:
			case <-ctx.Done():
				if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrHelper) {
					<-lost // ended by the library's own bound: within killTimeout
				} // else the caller's deadline comes first
			}
		}
	}
	return res, err
}

// killSession has another helper, run as user, kill the running commands of
// the helper leading session, and that helper. It fails quietly: the
// sandbox may be closed or gone, and the caller has an error to report.
func (s *DockerSandbox) killSession(session int, user string) {
	if session <= 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if p, err := s.startExec(ctx, proto.Request{Op: proto.OpKill, Session: session}, callOptions{user: user}); err == nil {
		_, _ = p.wait()
	}
}

// watch drops the connection when wait has waited silenceLimit for a frame:
// a helper with a request running says it is alive every
// proto.AliveInterval, so it has been stopped. (Time spent delivering
// output to a slow writer does not count.)
func (c *helperCall) watch(stop <-chan struct{}) {
	c.s.watchSilence(stop, func() int64 { return c.heardSince(c.readingSince.Load()) }, silenceLimit, func() {
		c.stalled.Store(true)
		c.close()
	})
}

// lost makes sure the request's command is dead: its helper serves it
// alone, so it and its commands are killed.
func (c *helperCall) lost() { c.s.killSession(c.hello.Session, c.co.user) }

func (c *helperCall) context() context.Context { return c.ctx }
func (c *helperCall) operation() string        { return c.op }

func (c *chanCall) context() context.Context { return c.ctx }
func (c *chanCall) operation() string        { return c.op }

// lost makes sure the request's command is dead. On a broken channel, the
// channel's commands are killed (reap); on one that did not confirm a
// cancel in time, a check tells a slow helper (which will kill the command)
// from a stopped one (the channel is then broken).
func (c *chanCall) lost() {
	if !c.ch.broken() {
		<-c.ch.check()
	}
	if c.ch.broken() {
		<-c.ch.reaped
	}
}

// reap kills the commands of a broken channel's helper, then closes
// reaped. (A channel breaks with ErrClosed only when the sandbox closes:
// killSession then does nothing, and removing the container ends them.)
func (ch *channel) reap() {
	defer close(ch.reaped)
	ch.s.killSession(ch.hc.hello.Session, "")
}

// watch checks the channel when requests are pending and the helper, which
// says it is alive every proto.AliveInterval while it has requests, has
// been silent for stallTimeout: it may have been stopped.
func (ch *channel) watch() {
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	for {
		select {
		case <-ch.done:
			return
		case <-t.C:
			ch.mu.Lock()
			busy := len(ch.pending) > 0
			ch.mu.Unlock()
			if busy && ch.s.silence(ch.hc.heardSince(ch.heard.Load())) > stallTimeout { // not while paused
				ch.check()
			}
		}
	}
}

// check makes sure the channel still answers: after a silence or a cancel
// it did not confirm, its helper may have been stopped, and every request
// on it would wait for ever. It sends a trivial request; without an answer
// within stallTimeout the channel is broken. Meanwhile the channel takes
// no new requests. The returned channel is closed with the verdict;
// concurrent checks share one.
func (ch *channel) check() <-chan struct{} {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.checked != nil {
		return ch.checked
	}
	done := make(chan struct{})
	ch.checked = done
	go func() {
		ch.probe()
		ch.mu.Lock()
		ch.checked = nil
		ch.mu.Unlock()
		close(done)
	}()
	return done
}

// suspect reports whether a check of the channel runs.
func (ch *channel) suspect() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.checked != nil
}

func (ch *channel) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
	defer cancel()
	c, err := ch.start(ctx, proto.Request{Op: proto.OpStat, Paths: []string{"/"}}, callOptions{})
	if err != nil {
		if ctx.Err() != nil { // a writer held the connection all along
			ch.breakWith(errChannelStalled)
		}
		return // else broken already
	}
	// The answer may wait behind a large frame in transit: silence breaks
	// the channel, and so does no answer within twice the stall bound (a
	// helper that talks but never answers).
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	bound := time.NewTimer(2 * stallTimeout)
	defer bound.Stop()
	for asked := time.Now().UnixNano(); ; {
		select {
		case <-c.result:
			return
		case <-ch.done:
			return
		case <-bound.C:
			ch.breakWith(errChannelStalled)
			return
		case <-t.C:
			if ch.s.silence(ch.hc.heardSince(asked)) > stallTimeout {
				ch.breakWith(errChannelStalled)
				return
			}
		}
	}
}
