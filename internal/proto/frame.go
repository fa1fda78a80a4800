// Package proto is the wire protocol between the library and the in-container
// helper: length-prefixed frames carrying JSON requests and results, input
// data and output data. It is the same on a one-shot exec and on a persistent
// channel, so requests carry an ID.
package proto

import (
	"bufio"
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
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteFrame writes one frame atomically with respect to other callers.
func (w *Writer) WriteFrame(kind Kind, id uint32, payload []byte) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("proto: frame payload of %d bytes exceeds %d", len(payload), MaxPayload)
	}
	var hdr [headerSize]byte
	hdr[0] = byte(kind)
	binary.BigEndian.PutUint32(hdr[1:5], id)
	binary.BigEndian.PutUint32(hdr[5:9], uint32(len(payload)))
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(append(hdr[:], payload...)); err != nil {
		return err
	}
	if f, ok := w.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// Reader reads frames.
type Reader struct {
	r *bufio.Reader
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// ErrBadFrame reports a frame that breaks the protocol.
var ErrBadFrame = errors.New("proto: malformed frame")

// ReadFrame reads the next frame. It returns io.EOF only at a frame boundary.
func (r *Reader) ReadFrame() (Frame, error) {
	var hdr [headerSize]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Frame{}, fmt.Errorf("%w: truncated header", ErrBadFrame)
		}
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[5:9])
	if n > MaxPayload {
		return Frame{}, fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrBadFrame, n, MaxPayload)
	}
	f := Frame{Kind: Kind(hdr[0]), ID: binary.BigEndian.Uint32(hdr[1:5])}
	switch f.Kind {
	case KindHello, KindRequest, KindInput, KindCancel, KindStdout, KindStderr, KindResult, KindAlive:
	default:
		return Frame{}, fmt.Errorf("%w: unknown kind %q", ErrBadFrame, hdr[0])
	}
	if n > 0 {
		f.Payload = make([]byte, n)
		if _, err := io.ReadFull(r.r, f.Payload); err != nil {
			return Frame{}, fmt.Errorf("%w: truncated payload: %v", ErrBadFrame, err)
		}
	}
	return f, nil
}
