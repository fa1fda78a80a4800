package helper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Streams (dial, watch) stay open until their Result, with data frames in
// both directions, each within the credit the other side granted (see
// proto.StreamWindow). The serve loop hands a stream's frames to it
// without ever blocking: data arrives only within what this side granted,
// so it is buffered, at most a window; more is the library lying, which
// ends that stream.

// streamTable holds a server's open streams by request ID.
type streamTable struct {
	mu sync.Mutex
	m  map[uint32]*hstream
}

// hstream is the helper's side of one stream.
type hstream struct {
	op     string
	send   func(proto.Kind, []byte) error
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	in      [][]byte // data from the library, not yet written on
	inEOF   bool     // the library half-closed
	allowed int      // bytes the library may still send
	unacked int      // bytes consumed and not yet granted again
	credit  int      // bytes this side may still send
	inWake  chan struct{}
	crWake  chan struct{}
}

// errLibraryLied: the library sent beyond its credit or after its EOF.
var errLibraryLied = errors.New("the library broke the stream protocol")

// open registers the stream of request id; the caller removes it.
func (t *streamTable) open(ctx context.Context, id uint32, op string, send func(proto.Kind, []byte) error) (*hstream, context.Context) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := proto.StreamWindow(op)
	st := &hstream{op: op, send: send, cancel: cancel, allowed: w, credit: w,
		inWake: make(chan struct{}, 1), crWake: make(chan struct{}, 1)}
	t.mu.Lock()
	if t.m == nil {
		t.m = map[uint32]*hstream{}
	}
	t.m[id] = st
	t.mu.Unlock()
	return st, ctx
}

func (t *streamTable) remove(id uint32) {
	t.mu.Lock()
	if st := t.m[id]; st != nil {
		st.cancel(context.Canceled)
	}
	delete(t.m, id)
	t.mu.Unlock()
}

// frame hands a stream frame from the library to its stream; it never
// blocks. Frames of unknown (finished) streams are dropped.
func (t *streamTable) frame(f proto.Frame) {
	t.mu.Lock()
	st := t.m[f.ID]
	t.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch f.Kind {
	case proto.KindData:
		if st.inEOF || len(f.Payload) > st.allowed {
			st.cancel(fmt.Errorf("%w: %d bytes beyond its credit of %d", errLibraryLied, len(f.Payload), st.allowed))
			return
		}
		st.allowed -= len(f.Payload)
		if len(f.Payload) > 0 {
			st.in = append(st.in, f.Payload)
		}
		poke(st.inWake)
	case proto.KindEOF:
		st.inEOF = true
		poke(st.inWake)
	case proto.KindWindow:
		n, err := proto.ParseWindow(f.Payload)
		if err != nil || st.credit+n > 1<<30 {
			st.cancel(fmt.Errorf("%w: a bad window", errLibraryLied))
			return
		}
		st.credit += n
		poke(st.crWake)
	default:
		st.cancel(fmt.Errorf("%w: a %q frame", errLibraryLied, f.Kind))
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// next returns the next data from the library, io.EOF after its
// half-close, or ctx's cause.
func (st *hstream) next(ctx context.Context) ([]byte, error) {
	for {
		st.mu.Lock()
		if len(st.in) > 0 {
			p := st.in[0]
			st.in[0] = nil
			st.in = st.in[1:]
			st.mu.Unlock()
			return p, nil
		}
		eof := st.inEOF
		st.mu.Unlock()
		if eof {
			return nil, io.EOF
		}
		select {
		case <-st.inWake:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// consumed grants the library n more bytes, once a quarter window has
// been consumed.
func (st *hstream) consumed(n int) error {
	st.mu.Lock()
	st.unacked += n
	grant := 0
	if st.unacked >= proto.StreamWindow(st.op)/4 {
		grant, st.unacked = st.unacked, 0
		st.allowed += grant
	}
	st.mu.Unlock()
	if grant == 0 {
		return nil
	}
	return st.send(proto.KindWindow, proto.Window(grant))
}

// take waits until at least least bytes of credit are there and takes
// up to most of them.
func (st *hstream) take(ctx context.Context, least, most int) (int, error) {
	for {
		st.mu.Lock()
		if st.credit >= least && st.credit > 0 {
			n := min(st.credit, most)
			st.credit -= n
			st.mu.Unlock()
			return n, nil
		}
		st.mu.Unlock()
		select {
		case <-st.crWake:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
}

// giveBack returns credit taken and not used.
func (st *hstream) giveBack(n int) {
	if n <= 0 {
		return
	}
	st.mu.Lock()
	st.credit += n
	st.mu.Unlock()
}

// validateDial checks a dial request (a watch needs only its path).
func validateDial(req *proto.Request) *proto.Error {
	switch req.Network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return badRequest("dial: unsupported network %q (tcp, tcp4, tcp6 or unix)", clip(req.Network))
	}
	switch {
	case req.Address == "":
		return badRequest("dial without an address")
	case len(req.Address) > 4096 || strings.IndexByte(req.Address, 0) >= 0:
		return badRequest("dial: unusable address %q", clip(req.Address))
	}
	return validateDirect(req)
}
