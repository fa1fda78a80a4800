package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	s       *DockerSandbox
	hc      *helperConn
	mu      sync.Mutex
	pending map[uint32]*chanCall
	nextID  uint32
	done    chan struct{} // closed when the channel breaks
	once    sync.Once
	err     error
	reaped  chan struct{} // closed when the commands of a broken channel are dead
	checked chan struct{} // the check in flight, if any; see check
	// heard is when the helper last sent a frame (unix nanoseconds), or
	// when the channel last became busy.
	heard atomic.Int64
}

// channel returns the sandbox's shared channel, opening it when needed, or
// nil when it cannot be had now.
func (s *DockerSandbox) channel(ctx context.Context) *channel {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	if s.ch != nil && !s.ch.broken() {
		if s.ch.suspect() {
			return nil // requests use their own execs until it answers
		}
		return s.ch
	}
	if time.Now().Before(s.chRetryAt) {
		return nil
	}
	hc, err := s.attachHelper(ctx, "serve", "")
	if err != nil {
		if ctx.Err() == nil {
			s.chRetryAt = time.Now().Add(channelRetry)
		}
		return nil
	}
	s.ch = &channel{s: s, hc: hc, pending: map[uint32]*chanCall{}, done: make(chan struct{}), reaped: make(chan struct{})}
	go s.ch.readLoop()
	go s.ch.watch()
	return s.ch
}

// closeChannel drops the shared channel, if any.
func (s *DockerSandbox) closeChannel() {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	if s.ch != nil {
		s.ch.breakWith(ErrClosed)
	}
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
		ch.hc.conn.Close()
		go ch.reap()
	})
}

// readLoop delivers frames to their requests until the connection ends.
func (ch *channel) readLoop() {
	for {
		f, err := ch.hc.frames.ReadFrame()
		if err != nil {
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
		if c == nil {
			continue // a cancelled request's late frames
		}
		switch f.Kind {
		case proto.KindStdout, proto.KindStderr:
			c.deliver(f)
		case proto.KindResult:
			var res proto.Result
			if err := json.Unmarshal(f.Payload, &res); err != nil {
				ch.breakWith(fmt.Errorf("bad result: %w", err))
				return
			}
			c.result <- &res
		default:
			ch.breakWith(fmt.Errorf("unexpected frame %q", f.Kind))
			return
		}
	}
}

// chanCall is a request on the shared channel.
type chanCall struct {
	ch     *channel
	id     uint32
	ctx    context.Context
	co     callOptions
	result chan *proto.Result
	outMu  sync.Mutex // orders deliveries before the end of wait
	ended  bool       // wait returned: output goes nowhere
}

// deliver hands an output frame to the call's writers (the library's own:
// they neither fail nor block), unless wait already returned.
func (c *chanCall) deliver(f proto.Frame) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if !c.ended {
		_ = c.co.deliver(f)
	}
}

// endOutput stops deliveries; after it, the writers are the caller's alone.
func (c *chanCall) endOutput() {
	c.outMu.Lock()
	c.ended = true
	c.outMu.Unlock()
}

// start registers and sends a request.
func (ch *channel) start(ctx context.Context, req proto.Request, co callOptions) (*chanCall, error) {
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
	c := &chanCall{ch: ch, id: ch.nextID, ctx: ctx, co: co, result: make(chan *proto.Result, 1)}
	ch.pending[c.id] = c
	ch.mu.Unlock()
	if err := ch.hc.out.WriteFrame(proto.KindRequest, c.id, body); err != nil {
		ch.breakWith(err)
		ch.forget(c.id)
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
			return nil, errChannelBroken
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
