// Package enginerelay serves an engine.Engine over a unix socket and dials
// it back as an engine.Engine: test infrastructure (standard library only),
// so that the core module's tests run on an engine the core module cannot
// import (Kubernetes', which needs client-go).
//
// One connection carries one call. Each side writes frames: a kind byte,
// a 4-byte big-endian length, the payload. The client sends a header
// (JSON), then, for CopyTo and Exec, its bytes as data frames ended by an
// end frame; the server answers with a result (JSON, with the error and
// its sentinels), then, for CopyFrom and Exec, the output as data frames,
// each stream ended by its end frame. Closing the connection cancels the
// call on the server (its context, or the Exec stream).
//
// The relay is transparent: Name is the served engine's, errors keep
// their sentinels (errors.Is works across it: engine.ErrNotFound,
// ErrNotRunning, ErrPaused, ErrUnreachable, ErrIsDir, ErrImageNotFound, errors.ErrUnsupported,
// fs.ErrNotExist, syscall.ENOSPC, context.Canceled and DeadlineExceeded),
// and the client is an engine.Pauser or engine.Stopper only if the served
// engine is; it is always an engine.Meter, whose Usage wraps
// errors.ErrUnsupported when the served engine is not one. The helper
// binary (engine.Spec.Helper.Binary, a function) is not sent: the server
// uses the one of its own build (helperbin.For), which is the client's
// when both are built from one checkout.
package enginerelay

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/engine"
)

// Frame kinds.
const (
	kindHeader = 'H' // client: the call (JSON request)
	kindResult = 'R' // server: the call's result (JSON result)
	kindData   = 'd' // client: stdin or tar bytes; server: stdout or tar bytes
	kindErrOut = 'e' // server: stderr bytes
	kindEnd    = 'z' // client: end of input (CloseWrite); server: end of stdout / tar (JSON errInfo, optional)
	kindErrEnd = 'Z' // server: end of stderr
)

// maxFrame bounds a frame's payload, both ways.
const maxFrame = 1 << 20

// chunk is the size of the data frames written.
const chunk = 32 << 10

// request is a call.
type request struct {
	Op     string            `json:"op"`
	ID     string            `json:"id,omitempty"`
	Spec   *wireSpec         `json:"spec,omitempty"`
	Argv   []string          `json:"argv,omitempty"`
	User   string            `json:"user,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Dir    string            `json:"dir,omitempty"`
	Path   string            `json:"path,omitempty"`
	Grace  time.Duration     `json:"grace,omitempty"`
}

// wireSpec is an engine.Spec on the wire: its Helper without Binary (a
// function), every other field as it is.
type wireSpec struct {
	*engine.Spec
	Helper wireHelper // hides Spec.Helper
}

type wireHelper struct{ Dir, Path string }

// result is a call's answer.
type result struct {
	Err   *errInfo      `json:"err,omitempty"`
	Info  *engine.Info  `json:"info,omitempty"`
	Infos []engine.Info `json:"infos,omitempty"`
	Hello *hello        `json:"hello,omitempty"`
	Usage *engine.Usage `json:"usage,omitempty"`
}

// hello describes the served engine.
type hello struct {
	Name    string `json:"name"`
	Pauser  bool   `json:"pauser"`
	Stopper bool   `json:"stopper"`
}

// errInfo is an error on the wire: its text and the sentinels it wraps.
type errInfo struct {
	Msg   string   `json:"msg"`
	Kinds []string `json:"kinds,omitempty"`
}

// sentinels are the errors whose identity crosses the relay.
var sentinels = []struct {
	name string
	err  error
}{
	{"notfound", engine.ErrNotFound},
	{"notrunning", engine.ErrNotRunning},
	{"paused", engine.ErrPaused},
	{"unreachable", engine.ErrUnreachable},
	{"isdir", engine.ErrIsDir},
	{"imagenotfound", engine.ErrImageNotFound},
	{"unsupported", errors.ErrUnsupported},
	{"notexist", fs.ErrNotExist},
	{"enospc", syscall.ENOSPC},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
}

func encodeErr(err error) *errInfo {
	if err == nil {
		return nil
	}
	ei := &errInfo{Msg: err.Error()}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			ei.Kinds = append(ei.Kinds, s.name)
		}
	}
	return ei
}

// remoteError is an error of the served engine: its text, and the
// sentinels it wrapped for errors.Is.
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

func (ei *errInfo) err() error {
	if ei == nil {
		return nil
	}
	re := &remoteError{msg: ei.Msg}
	for _, k := range ei.Kinds {
		for _, s := range sentinels {
			if s.name == k {
				re.errs = append(re.errs, s.err)
			}
		}
	}
	return re
}

func writeFrame(w io.Writer, kind byte, p []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	if len(p) == 0 {
		_, err := w.Write(h[:])
		return err
	}
	// One write, so that concurrent writers (under a lock) stay whole.
	buf := make([]byte, 5+len(p))
	copy(buf, h[:])
	copy(buf[5:], p)
	_, err := w.Write(buf)
	return err
}

func writeJSON(w io.Writer, kind byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, kind, b)
}

// readFrame reads a frame into buf (grown as needed, up to maxFrame).
func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("enginerelay: frame of %d bytes (at most %d)", n, maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, fmt.Errorf("enginerelay: short frame: %w", err)
	}
	return h[0], buf, nil
}

func readJSON(r io.Reader, want byte, v any) error {
	kind, p, err := readFrame(r, nil)
	if err != nil {
		return err
	}
	if kind != want {
		return fmt.Errorf("enginerelay: frame %q, want %q", kind, want)
	}
	return json.Unmarshal(p, v)
}
