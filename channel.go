package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// errChannelBroken: the shared channel to the helper failed; requests in
// flight on it are lost (the helper kills their commands).
var errChannelBroken = fmt.Errorf("%w: the shared channel broke", ErrHelper)

// channelRetry is how long the sandbox waits before reopening a shared
// channel that could not be opened; meanwhile requests use their own execs.
const channelRetry = 5 * time.Second

// channel multiplexes requests over one long-lived helper exec ("serve").
type channel struct {
	s       *Sandbox
	hc      *helperConn
	mu      sync.Mutex
	pending map[uint32]*chanCall
	nextID  uint32
	done    chan struct{} // closed when the channel breaks
	once    sync.Once
	err     error
	killed  chan struct{} // closed when the commands of a broken channel are dead
	checked chan struct{} // the check in flight, if any; see check
	// heard is when the helper last sent a frame (unix nanoseconds), or
	// when the channel last became busy.
	heard atomic.Int64
}

// channel returns the sandbox's shared channel, opening it when needed, or
// nil when it cannot be had now, with the error of the opening that just
// failed, if any. The channel opens in the background, bounded by the
// helper handshake, not by the caller's context: callers wait for it
// within their own, and no lock is held meanwhile.
func (s *Sandbox) channel(ctx context.Context) (*channel, error) {
	s.chMu.Lock()
	if ch := s.ch; ch != nil && !ch.broken() {
		s.chMu.Unlock()
		if ch.suspect() {
			return nil, nil // requests use their own execs until it answers
		}
		return ch, nil
	}
	if time.Now().Before(s.chRetryAt) || s.closed.Load() {
		s.chMu.Unlock()
		return nil, nil
	}
	op := s.chOpening
	if op == nil {
		op = &opening{done: make(chan struct{})}
		s.chOpening = op
		go s.open(op)
	}
	s.chMu.Unlock()
	select {
	case <-op.done:
		return op.ch, op.err
	case <-ctx.Done():
		return nil, nil
	}
}

// opening is the shared channel being opened.
type opening struct {
	done chan struct{} // closed when ch or err is set
	ch   *channel
	err  error
}

// open opens the shared channel for op.
func (s *Sandbox) open(op *opening) {
	hc, err := s.dialHelper()
	s.chMu.Lock()
	defer s.chMu.Unlock()
	defer close(op.done)
	s.chOpening = nil
	switch {
	case err != nil:
		s.chRetryAt = time.Now().Add(channelRetry)
		op.err = err
		return
	case s.closed.Load(): // Close ran meanwhile and found no channel
		hc.close()
		op.err = ErrClosed
		return
	}
	ch := &channel{s: s, hc: hc, pending: map[uint32]*chanCall{}, done: make(chan struct{}), killed: make(chan struct{})}
	// A helper that stops reading would block every writer; a frozen
	// helper or a stalled engine reads nothing for a while.
	hc.out.Watch(stallTimeout, func(waited time.Duration) bool {
		if waited < stallTimeout+maxExcuse && s.excused(stallTimeout) {
			return false
		}
		ch.breakWith(s.silenceErr(errChannelStalled))
		return true
	})
	s.ch, op.ch = ch, ch
	go ch.readLoop()
	go ch.watch()
}

// dialHelper starts the shared channel's helper and reads its hello: on
// the first channel, over the port socket, or on an exec's stream, the
// first of them that can be had.
func (s *Sandbox) dialHelper() (*helperConn, error) {
	if hc, ok, err := s.openFirst(); ok {
		return hc, err
	}
	if hc, ok, err := s.openDirect(); ok {
		return hc, err
	}
	return s.attachHelper(context.Background(), "serve", "")
}

// closeChannel drops the shared channel, if any.
func (s *Sandbox) closeChannel() {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	s.dropFirst()
	if s.ch != nil {
		s.ch.breakWith(ErrClosed)
	}
}

// brokenErr is errChannelBroken with the reason, once the channel broke.
// ended reports whether a container in state st no longer runs and will
// not again by itself (a paused one runs; an unknown state is not known to
// have ended).
func ended(st engine.State) bool {
	switch st {
	case engine.StateUnknown, engine.StateRunning, engine.StateRestarting, engine.StatePaused:
		return false
	}
	return true
}

// errContainerEnded: the engine says the channel's container ended.
var errContainerEnded = fmt.Errorf("%w: the container ended under the shared channel", ErrHelper)

func (ch *channel) brokenErr() error {
	if errors.Is(ch.err, ErrDaemonUnreachable) { // the engine's silence, not the helper's
		return fmt.Errorf("%w (%w)", errChannelBroken, ch.err)
	}
	return fmt.Errorf("%w (%v)", errChannelBroken, ch.err)
}

func (ch *channel) broken() bool {
	select {
	case <-ch.done:
		return true
	default:
		return false
	}
}

// breakWith marks the channel broken, once, and closes its connection.
func (ch *channel) breakWith(err error) {
	ch.once.Do(func() {
		ch.err = err
		close(ch.done)
		ch.hc.close()
		go ch.killCommands()
	})
}

// readLoop delivers frames to their requests until the connection ends.
// A frame larger than its request allows, or that breaks the protocol,
// breaks the channel.
func (ch *channel) readLoop() {
	for {
		f, err := ch.hc.frames.ReadFrameLimited(ch.limit)
		if err != nil {
			if errors.Is(err, proto.ErrBadFrame) {
				err = fmt.Errorf("%w: %w", errHelperLied, err)
			}
			ch.breakWith(err)
			return
		}
		ch.heard.Store(time.Now().UnixNano())
		ch.mu.Lock()
		c := ch.pending[f.ID]
		if f.Kind == proto.KindResult {
			delete(ch.pending, f.ID)
		}
		ch.mu.Unlock()
		if f.Kind == proto.KindAlive {
			continue
		}
		if c == nil {
			continue // a cancelled request's late frames
		}
		switch f.Kind {
		case proto.KindStdout, proto.KindStderr:
			if !proto.HasOutput(c.op) {
				ch.breakWith(fmt.Errorf("%w: output from a %s request", errHelperLied, c.op))
				return
			}
			if err := c.deliver(f); err != nil {
				ch.breakWith(err)
				return
			}
		case proto.KindData, proto.KindWindow, proto.KindEOF, proto.KindOpen:
			if err := c.co.stream.frame(f); err != nil { // never blocks (stream.go)
				ch.breakWith(err)
				return
			}
		case proto.KindResult:
			var res proto.Result
			if err := json.Unmarshal(f.Payload, &res); err != nil {
				ch.breakWith(fmt.Errorf("%w: bad result: %w", errHelperLied, err))
				return
			}
			c.result <- &res
		default:
			ch.breakWith(fmt.Errorf("%w: unexpected frame %q", errHelperLied, f.Kind))
			return
		}
	}
}

// limit says how large a frame may be: by its kind and its request's
// operation; a frame of no pending request is skipped unread.
func (ch *channel) limit(kind proto.Kind, id uint32) int {
	if kind == proto.KindAlive || kind == proto.KindHello {
		return proto.MaxFrom(kind, "")
	}
	ch.mu.Lock()
	c := ch.pending[id]
	ch.mu.Unlock()
	if c == nil {
		return proto.Discard
	}
	return proto.MaxFrom(kind, c.op)
}

// chanCall is a request on the shared channel.
type chanCall struct {
	ch     *channel
	id     uint32
	op     string
	ctx    context.Context
	co     callOptions
	result chan *proto.Result
	outMu  sync.Mutex // orders deliveries before the end of wait
	ended  bool       // wait returned: output goes nowhere
}

// deliver hands an output frame to the call's writers (the library's own:
// they do not block, and fail only on more output than the helper may
// send), unless wait already returned.
func (c *chanCall) deliver(f proto.Frame) error {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if c.ended {
		return nil
	}
	return c.co.deliver(f)
}

// endOutput stops deliveries; after it, the writers are the caller's alone.
func (c *chanCall) endOutput() {
	c.outMu.Lock()
	c.ended = true
	c.outMu.Unlock()
}

// start registers and sends a request.
func (ch *channel) start(ctx context.Context, req proto.Request, co callOptions) (*chanCall, error) {
	if err := helperCan(req, ch.hc.hello); err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ch.mu.Lock()
	if ch.broken() {
		ch.mu.Unlock()
		return nil, errChannelBroken
	}
	if len(ch.pending) == 0 {
		ch.heard.Store(time.Now().UnixNano()) // silence counts from now
	}
	ch.nextID++
	c := &chanCall{ch: ch, id: ch.nextID, op: req.Op, ctx: ctx, co: co, result: make(chan *proto.Result, 1)}
	ch.pending[c.id] = c
	ch.mu.Unlock()
	if err := ch.hc.out.WriteFrameContext(ctx, proto.KindRequest, c.id, body); err != nil {
		ch.forget(c.id)
		if ctxErr := ctx.Err(); ctxErr != nil && err == ctxErr {
			return nil, ctxErr // nothing was written: the channel is intact
		}
		ch.breakWith(err)
		return nil, errChannelBroken
	}
	if co.stdin != nil {
		go pumpInput(c.ch.hc.out, c.id, c.co.stdin)
	}
	return c, nil
}

func (ch *channel) forget(id uint32) {
	ch.mu.Lock()
	delete(ch.pending, id)
	ch.mu.Unlock()
}

// wait waits for the result. When ctx ends first, it asks the helper to
// cancel (kill the command) and waits a little for its confirmation.
func (c *chanCall) wait() (*proto.Result, error) {
	defer c.endOutput()
	select {
	case res := <-c.result:
		return res, c.ctx.Err()
	case <-c.ch.done:
		select {
		case res := <-c.result: // it arrived just before the break
			return res, c.ctx.Err()
		default:
			return nil, c.ch.brokenErr()
		}
	case <-c.ctx.Done():
	}
	go func() { _ = c.ch.hc.out.WriteFrame(proto.KindCancel, c.id, nil) }()
	timer := time.NewTimer(cancelGrace)
	defer timer.Stop()
	select {
	case res := <-c.result:
		return res, c.ctx.Err()
	case <-c.ch.done:
	case <-timer.C:
		c.ch.forget(c.id)
	}
	return nil, c.ctx.Err()
}

// goneSettle bounds how long goneOr waits for the daemon to notice that a
// container whose helper connection broke has exited.
const goneSettle = time.Second

// goneLooks is how many inspects goneOr makes at least before it gives up.
const goneLooks = 4

// goneOr returns ErrGone when err is a helper failure and the container is
// not running any more (killed or removed from outside); else err. It looks
// within ctx, the call's.
func (s *Sandbox) goneOr(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, ErrHelper) || errors.Is(err, ErrProtocolVersion) {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if ctx.Err() != nil { // the call's time is up: no looking
		return err
	}
	// Bounded: the daemon itself may be what does not answer.
	ctx, cancel := context.WithTimeout(ctx, 3*goneSettle)
	defer cancel()
	// The helper's connection may break (the container is ending) before
	// the daemon records the exit: a running container is looked at again,
	// for goneSettle and at least goneLooks times (a loaded daemon answers
	// an inspect in a second; at a load of 30 it had not recorded a removal
	// after goneSettle).
	for deadline, looks := time.Now().Add(goneSettle), 1; ; looks++ {
		info, ierr := s.eng.Inspect(ctx, s.id)
		switch {
		case errors.Is(ierr, engine.ErrNotFound):
			return fmt.Errorf("sandbox %s: %w: the container was removed (%v)", s.ID(), ErrGone, err)
		case ierr == nil && info.State == engine.StatePaused:
			return fmt.Errorf("sandbox %s: %w: paused by another handle or from outside (%v)", s.ID(), ErrPaused, err)
		case ierr == nil && ended(info.State):
			return fmt.Errorf("sandbox %s: %w: the container exited with status %d (%v)", s.ID(), ErrGone, info.ExitCode, err)
		case errors.Is(ierr, engine.ErrUnreachable) && ctx.Err() == nil:
			return fmt.Errorf("%w (%w: %v)", err, ErrDaemonUnreachable, ierr)
		case ierr != nil || time.Now().After(deadline) && looks >= goneLooks:
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(goneSettle / 10):
		}
	}
}
