package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// A stream is a dial or a watch request that stays open on the shared
// channel, with data frames in both directions (see internal/proto's
// stream.go). Each direction has its own credit: the helper sends data
// only within the bytes this side granted (proto.StreamWindow, then a
// KindWindow each time the reader consumed a quarter of it), so what the
// read loop buffers for a stream is bounded by its window, and a reader
// that stops reading stops its stream, never the shared channel. A helper
// that sends beyond its credit lied: the channel breaks.

// streamOpenWait bounds how long a stream waits for a shared channel that
// is being checked or reopened.
const streamOpenWait = 5 * time.Second

// errStreamLied: the helper broke a stream's protocol.
var errStreamLied = fmt.Errorf("%w (stream)", errHelperLied)

// stream is the library's side of one stream.
type stream struct {
	s   *Sandbox
	ch  *channel
	c   *chanCall
	op  string
	win int

	mu      sync.Mutex
	opened  bool
	open    proto.StreamOpen
	buf     [][]byte     // data from the helper, not yet read
	off     int          // what was read of buf[0]
	allowed int          // bytes the helper may still send
	unacked int          // bytes read and not yet granted again
	eof     bool         // the helper half-closed
	credit  int          // bytes this side may still send
	wclosed bool         // CloseWrite
	closed  bool         // Close
	res     *proto.Error // the Result's error, once ended
	endErr  error        // why it ended (nil: a clean Result)

	openC   chan struct{} // closed at KindOpen
	ended   chan struct{} // closed when the stream ended
	closedC chan struct{} // closed by Close
	rwake   chan struct{}
	wwake   chan struct{}
}

// openStream sends req (OpDial, OpWatch) on the shared channel and waits,
// within ctx, for the helper to open the stream. An error before it
// opened is the Result's (see stream.res) or the channel's.
func (s *Sandbox) openStream(ctx context.Context, req proto.Request) (*stream, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.leave()
	ch, err := s.streamChannel(ctx)
	if err != nil {
		return nil, err
	}
	w := proto.StreamWindow(req.Op)
	st := &stream{s: s, ch: ch, op: req.Op, win: w, allowed: w, credit: w,
		openC: make(chan struct{}), ended: make(chan struct{}), closedC: make(chan struct{}),
		rwake: make(chan struct{}, 1), wwake: make(chan struct{}, 1)}
	c, err := ch.start(ctx, req, callOptions{shared: true, stream: st})
	if err != nil {
		if errors.Is(err, errChannelBroken) {
			return nil, s.goneOr(ctx, ch.brokenErr())
		}
		return nil, err
	}
	st.c = c
	go st.run()
	select {
	case <-st.openC:
		return st, nil
	case <-st.ended:
		select {
		case <-st.openC: // opened, then ended at once: still a stream to read
			return st, nil
		default:
		}
		if st.res == nil && st.endErr != nil {
			return nil, s.goneOr(ctx, st.endErr)
		}
		return st, nil // the caller reads st.res
	case <-ctx.Done():
		st.close()
		<-st.ended // the helper's confirmation, within cancelGrace (see run)
		return nil, ctx.Err()
	}
}

// streamChannel returns the shared channel, waiting (within ctx and
// streamOpenWait) while it is being opened or checked.
func (s *Sandbox) streamChannel(ctx context.Context) (*channel, error) {
	deadline := time.Now().Add(streamOpenWait)
	for {
		ch, err := s.channel(ctx)
		switch {
		case ch != nil:
			return ch, nil
		case s.closed.Load():
			return nil, ErrClosed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, s.goneOr(ctx, err)
		case time.Now().After(deadline):
			return nil, s.goneOr(ctx, fmt.Errorf("%w: the shared channel to the helper is not available", ErrHelper))
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// run waits for the end of the stream: its Result, the channel breaking,
// or Close (which cancels the request and waits a little for the Result).
func (st *stream) run() {
	c := st.c
	select {
	case res := <-c.result:
		st.finish(res, nil)
		return
	case <-st.ch.done:
		st.finish(nil, st.brokenErr())
		return
	case <-st.closedC:
	}
	go func() { _ = st.ch.hc.out.WriteFrame(proto.KindCancel, c.id, nil) }()
	timer := time.NewTimer(cancelGrace)
	defer timer.Stop()
	select {
	case res := <-c.result:
		st.finish(res, nil)
	case <-st.ch.done:
		st.finish(nil, st.brokenErr())
	case <-timer.C:
		st.ch.forget(c.id)
		st.finish(nil, net.ErrClosed)
	}
}

func (st *stream) brokenErr() error {
	if st.s.closed.Load() {
		return ErrClosed
	}
	return st.ch.brokenErr()
}

// finish marks the stream ended, by res or err.
func (st *stream) finish(res *proto.Result, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	select {
	case <-st.ended:
		return
	default:
	}
	if res != nil {
		st.res = res.Error
		if res.Error != nil {
			st.endErr = errors.New(res.Error.Message)
		}
	} else {
		st.endErr = err
	}
	close(st.ended)
	poke(st.rwake)
	poke(st.wwake)
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// frame takes a stream frame from the read loop; it never blocks. An
// error breaks the channel (the helper lied).
func (st *stream) frame(f proto.Frame) error {
	if st == nil {
		return fmt.Errorf("%w: a %q frame for a request that is no stream", errStreamLied, f.Kind)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch f.Kind {
	case proto.KindOpen:
		if st.opened {
			return fmt.Errorf("%w: opened twice", errStreamLied)
		}
		if len(f.Payload) > 0 {
			if err := json.Unmarshal(f.Payload, &st.open); err != nil {
				return fmt.Errorf("%w: bad open: %w", errStreamLied, err)
			}
		}
		st.opened = true
		close(st.openC)
	case proto.KindData:
		switch {
		case !st.opened || st.eof:
			return fmt.Errorf("%w: data before the stream opened or after its end", errStreamLied)
		case len(f.Payload) > st.allowed:
			return fmt.Errorf("%w: %d bytes of data beyond its credit of %d", errStreamLied, len(f.Payload), st.allowed)
		}
		st.allowed -= len(f.Payload)
		if len(f.Payload) > 0 && !st.closed {
			st.buf = append(st.buf, f.Payload)
		} else {
			proto.ReleaseData(f.Payload)
		}
		poke(st.rwake)
	case proto.KindEOF:
		if !st.opened {
			return fmt.Errorf("%w: end of data before the stream opened", errStreamLied)
		}
		st.eof = true
		poke(st.rwake)
	case proto.KindWindow:
		n, err := proto.ParseWindow(f.Payload)
		if err != nil || !st.opened || st.credit+n > 1<<30 {
			return fmt.Errorf("%w: a bad window", errStreamLied)
		}
		st.credit += n
		poke(st.wwake)
	}
	return nil
}

// errStreamClosed, errWriteClosed: local ends.
var (
	errWriteClosed = errors.New("write after CloseWrite")
	errEnded       = errors.New("stream ended")
)

// read copies buffered data into p, waiting for some until the stream
// has more, its end (io.EOF after the helper's clean end, else the
// ending error), Close (net.ErrClosed) or the deadline (os.ErrDeadlineExceeded).
// With whole set it returns one frame's data, however large p is not: the
// caller gets the frame itself.
func (st *stream) read(p []byte, dl *deadline) (int, error) {
	for {
		st.mu.Lock()
		if st.closed {
			st.mu.Unlock()
			return 0, net.ErrClosed
		}
		if len(st.buf) > 0 {
			n := copy(p, st.buf[0][st.off:])
			if st.off += n; st.off == len(st.buf[0]) {
				proto.ReleaseData(st.buf[0]) // read: the read loop's next frame may take it
				st.buf[0] = nil
				st.buf = st.buf[1:]
				st.off = 0
			}
			grant := st.consumedLocked(n)
			st.mu.Unlock()
			st.grant(grant)
			return n, nil
		}
		if st.eof {
			st.mu.Unlock()
			return 0, io.EOF
		}
		select {
		case <-st.ended:
			st.mu.Unlock()
			return 0, st.endedErr()
		default:
		}
		st.mu.Unlock()
		var dlc <-chan struct{}
		if dl != nil {
			dlc = dl.wait()
		}
		select {
		case <-st.rwake:
		case <-st.ended:
		case <-st.closedC:
		case <-dlc:
			return 0, errTimeout
		}
	}
}

// chunk returns the next data frame whole (a watch's batch of events).
func (st *stream) chunk(done <-chan struct{}) ([]byte, error) {
	for {
		st.mu.Lock()
		if len(st.buf) > 0 {
			p := st.buf[0]
			st.buf[0] = nil
			st.buf = st.buf[1:]
			grant := st.consumedLocked(len(p))
			st.mu.Unlock()
			st.grant(grant)
			return p, nil
		}
		if st.eof || st.closed {
			st.mu.Unlock()
			return nil, io.EOF
		}
		select {
		case <-st.ended:
			st.mu.Unlock()
			return nil, st.endedErr()
		default:
		}
		st.mu.Unlock()
		select {
		case <-st.rwake:
		case <-st.ended:
		case <-st.closedC:
		case <-done:
			return nil, errEnded
		}
	}
}

// endedErr is what a read returns once the buffer is empty and the stream
// ended without the helper's half-close.
func (st *stream) endedErr() error {
	if st.res == nil && st.endErr == nil {
		return io.EOF
	}
	if st.endErr == nil {
		return errEnded
	}
	return st.endErr
}

// consumedLocked counts n bytes read and returns the grant to send, once a
// quarter window was read (none after the end: the helper is done).
func (st *stream) consumedLocked(n int) int {
	st.unacked += n
	if st.unacked < st.win/4 || st.eof {
		return 0
	}
	select {
	case <-st.ended:
		return 0
	default:
	}
	g := st.unacked
	st.unacked = 0
	st.allowed += g
	return g
}

func (st *stream) grant(n int) {
	if n > 0 {
		st.sendFrame(proto.KindWindow, proto.Window(n))
	}
}

// sendFrame writes a frame of the stream; a failed write breaks the channel.
func (st *stream) sendFrame(kind proto.Kind, p []byte) error {
	if err := st.ch.hc.out.WriteFrame(kind, st.c.id, p); err != nil {
		st.ch.breakWith(err)
		return st.brokenErr()
	}
	return nil
}

// write sends p within credit, waiting for credit until the deadline.
func (st *stream) write(p []byte, dl *deadline) (int, error) {
	n := 0
	for n < len(p) {
		st.mu.Lock()
		var err error
		switch {
		case st.closed:
			err = net.ErrClosed
		case st.wclosed:
			err = errWriteClosed
		}
		select {
		case <-st.ended:
			if err == nil {
				err = st.endedWriteErr()
			}
		default:
		}
		if err != nil {
			st.mu.Unlock()
			return n, err
		}
		k := min(st.credit, len(p)-n, proto.StreamChunk)
		st.credit -= k
		st.mu.Unlock()
		if k == 0 {
			var dlc <-chan struct{}
			if dl != nil {
				dlc = dl.wait()
			}
			select {
			case <-st.wwake:
			case <-st.ended:
			case <-st.closedC:
			case <-dlc:
				return n, errTimeout
			}
			continue
		}
		if err := st.sendFrame(proto.KindData, p[n:n+k]); err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// endedWriteErr is what a write returns after the stream ended.
func (st *stream) endedWriteErr() error {
	if st.res == nil && st.endErr == nil {
		return errBrokenPipe
	}
	return st.endedErr()
}

// closeWrite sends the half-close, once.
func (st *stream) closeWrite() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return net.ErrClosed
	}
	if st.wclosed {
		st.mu.Unlock()
		return nil
	}
	st.wclosed = true
	st.mu.Unlock()
	select {
	case <-st.ended:
		return nil
	default:
	}
	return st.sendFrame(proto.KindEOF, nil)
}

// close ends the stream: the helper is asked to close it; what it still
// sends is dropped. It does not wait.
func (st *stream) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	st.closed = true
	st.buf, st.off = nil, 0
	close(st.closedC)
}
