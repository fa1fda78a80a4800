// Package proto is the wire protocol between the library and the in-container
// helper: length-prefixed frames carrying JSON requests and results, input
// data and output data. It is the same on a one-shot exec and on a persistent
// channel, so requests carry an ID.
package proto

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Version is the protocol version. The helper announces it in its first
// frame; a library that speaks another version refuses to talk.
// Version 2 added the Alive frame, the helper's session and the kill operation.
const Version = 2

// Kind says what a frame carries.
type Kind byte

// Frame kinds.
const (
	KindHello   Kind = 'H' // helper → library: Hello JSON, first frame
	KindRequest Kind = 'Q' // library → helper: Request JSON
	KindInput   Kind = 'I' // library → helper: input data; empty payload = end of input
	KindCancel  Kind = 'C' // library → helper: cancel the request
	KindStdout  Kind = 'O' // helper → library: command output
	KindStderr  Kind = 'E' // helper → library: command error output
	KindResult  Kind = 'R' // helper → library: Result JSON, last frame of a request
	KindAlive   Kind = 'A' // helper → library: ID 0, every AliveInterval while requests run
)

// AliveInterval is how often a helper with requests running says so
// (KindAlive): a channel silent for much longer has a stopped helper.
const AliveInterval = time.Second

// MaxPayload bounds one frame's payload, so a broken or hostile peer cannot
// make the other side allocate without limit.
const MaxPayload = 64 << 20

// ChunkSize is the size in which data (input, output) is cut into frames.
const ChunkSize = 32 << 10

const headerSize = 9 // kind, id (uint32), length (uint32)

// Frame is one unit on the wire.
type Frame struct {
	Kind    Kind
	ID      uint32
	Payload []byte
}

// Writer writes frames; it is safe for concurrent use.
type Writer struct {
	turn chan struct{} // holds a token while a frame is written
	w    io.Writer
	buf  []byte // the frame being written, kept for the next (chunks.go)
	// A write that takes longer than stall calls onStall (which should
	// make it fail, e.g. by closing the connection); see Watch.
	stall   time.Duration
	onStall func(waited time.Duration) bool
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, turn: make(chan struct{}, 1)} }

// Watch makes every later write that takes longer than d (once it is the
// writer's turn: waiting for other writers does not count) call onStall,
// which should end the write, e.g. by closing the connection, and report
// true: a peer that stops reading must not block writers for ever. When
// onStall reports false (the wait is not the peer's doing), it is called
// again after another d while the write still waits; waited is how long
// the write has waited so far.
func (w *Writer) Watch(d time.Duration, onStall func(waited time.Duration) bool) {
	w.stall, w.onStall = d, onStall
}

// WriteFrame writes one frame atomically with respect to other callers.
func (w *Writer) WriteFrame(kind Kind, id uint32, payload []byte) error {
	return w.WriteFrameContext(context.Background(), kind, id, payload)
}

// WriteFrameContext is WriteFrame, but gives up with ctx's error, having
// written nothing, when ctx ends while other writers hold the writer.
func (w *Writer) WriteFrameContext(ctx context.Context, kind Kind, id uint32, payload []byte) error {
	return w.writeFrames(ctx, Frame{Kind: kind, ID: id, Payload: payload})
}

// WriteFrames writes frames in one write (one message for the peer to
// wake up for), atomically with respect to other callers.
func (w *Writer) WriteFrames(frames ...Frame) error {
	return w.writeFrames(context.Background(), frames...)
}

// writeFrames writes frames in one write, once it is the writer's turn or
// not at all when ctx ends first.
func (w *Writer) writeFrames(ctx context.Context, frames ...Frame) error {
	for _, f := range frames {
		if len(f.Payload) > MaxPayload {
			return fmt.Errorf("proto: frame payload of %d bytes exceeds %d", len(f.Payload), MaxPayload)
		}
	}
	select {
	case w.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-w.turn }()
	if w.onStall != nil {
		defer w.watchWrite()()
	}
	buf := w.buf[:0]
	for _, f := range frames {
		var hdr [headerSize]byte
		hdr[0] = byte(f.Kind)
		binary.BigEndian.PutUint32(hdr[1:5], f.ID)
		binary.BigEndian.PutUint32(hdr[5:9], uint32(len(f.Payload)))
		buf = append(append(buf, hdr[:]...), f.Payload...)
	}
	if cap(buf) <= maxKeptFrame {
		w.buf = buf
	}
	if _, err := w.w.Write(buf); err != nil {
		return err
	}
	if f, ok := w.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// watchWrite calls onStall after every w.stall the write in progress
// takes, until onStall reports true or the returned stop is called.
func (w *Writer) watchWrite() (stop func()) {
	var mu sync.Mutex
	var t *time.Timer
	done := false
	began := time.Now()
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(w.stall, func() {
		if w.onStall(time.Since(began)) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Reset(w.stall)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		t.Stop()
	}
}

// Reader reads frames.
type Reader struct {
	r *bufio.Reader
	// scratch, when set, holds output frames' payloads (see ReuseOutput).
	scratch []byte
}

// ReuseOutput makes the reader keep the payload of every output frame
// (KindStdout, KindStderr) of up to ChunkSize bytes in one buffer, valid
// until the next read: a stream of output then costs no allocation. Only
// for a caller that is done with each output frame before it reads the next.
func (r *Reader) ReuseOutput() { r.scratch = make([]byte, ChunkSize) }

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// ErrBadFrame reports a frame that breaks the protocol.
var ErrBadFrame = errors.New("proto: malformed frame")

// ReadFrame reads the next frame, of at most MaxPayload bytes. It returns
// io.EOF only at a frame boundary.
func (r *Reader) ReadFrame() (Frame, error) {
	return r.ReadFrameLimited(func(Kind, uint32) int { return MaxPayload })
}

// Discard, returned by a limit function, makes ReadFrameLimited skip the
// frame's payload (up to MaxPayload bytes) without keeping it.
const Discard = -1

// ReadFrameLimited reads the next frame, refusing (ErrBadFrame) a payload
// longer than limit returns for the frame's kind and ID, before reading it:
// a peer cannot make the reader allocate more than the frame may carry.
// A limit of Discard skips the payload: the frame comes back without it.
func (r *Reader) ReadFrameLimited(limit func(Kind, uint32) int) (Frame, error) {
	var hdr [headerSize]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Frame{}, fmt.Errorf("%w: truncated header", ErrBadFrame)
		}
		return Frame{}, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[5:9]))
	f := Frame{Kind: Kind(hdr[0]), ID: binary.BigEndian.Uint32(hdr[1:5])}
	switch f.Kind {
	case KindHello, KindRequest, KindInput, KindCancel, KindStdout, KindStderr, KindResult, KindAlive, KindResize:
	default:
		if streamKind(f.Kind) {
			break
		}
		return Frame{}, fmt.Errorf("%w: unknown kind %q", ErrBadFrame, hdr[0])
	}
	max := limit(f.Kind, f.ID)
	if max == Discard {
		if n > MaxPayload {
			return Frame{}, fmt.Errorf("%w: %q payload of %d bytes exceeds %d", ErrBadFrame, f.Kind, n, MaxPayload)
		}
		if _, err := io.CopyN(io.Discard, r.r, n); err != nil {
			return Frame{}, fmt.Errorf("%w: truncated payload: %v", ErrBadFrame, err)
		}
		return f, nil
	}
	if n > int64(max) {
		return Frame{}, fmt.Errorf("%w: %q payload of %d bytes exceeds %d", ErrBadFrame, f.Kind, n, max)
	}
	if n > 0 {
		switch {
		case (f.Kind == KindStdout || f.Kind == KindStderr) && n <= int64(len(r.scratch)):
			f.Payload = r.scratch[:n]
		case f.Kind == KindData && n <= StreamChunk:
			f.Payload = dataBuffer(int(n)) // see ReleaseData
		default:
			f.Payload = make([]byte, n)
		}
		if _, err := io.ReadFull(r.r, f.Payload); err != nil {
			return Frame{}, fmt.Errorf("%w: truncated payload: %v", ErrBadFrame, err)
		}
	}
	return f, nil
}
