package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Serve answers requests read from r with frames written to w. It writes
// the Hello frame first. With once set it returns after the first request
// is answered; otherwise it serves until r ends. When r ends (the library
// went away), every running request is cancelled: its commands are killed.
func Serve(r io.Reader, w io.Writer, once bool) error {
	reserveThreads(8)
	announce()
	fw := proto.NewWriter(w)
	hello, _ := json.Marshal(proto.Hello{
		Version: proto.Version, Session: ownSession(), UID: os.Getuid(), GID: os.Getgid(), Arch: runtime.GOARCH,
		TTY: true, Caps: proto.Capabilities(),
	})
	if err := fw.WriteFrame(proto.KindHello, 0, hello); err != nil {
		return err
	}
	s := &server{w: fw, reqs: map[uint32]*request{}, done: make(chan struct{})}
	ctx, cancelAll := context.WithCancel(context.Background())
	defer func() {
		cancelAll()
		s.accepts.closeAll()
		s.waitRequests(lingerAfterEnd)
		removals.Wait()
	}()
	go s.keepAlive(ctx)

	frames := make(chan proto.Frame)
	readErr := make(chan error, 1)
	fr := proto.NewReader(r)
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				cancelAll() // the library is gone: stop everything now
				readErr <- err
				return
			}
			frames <- f
		}
	}()
	for {
		select {
		case <-s.done:
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case f := <-frames:
			if err := s.dispatch(ctx, f, once); err != nil {
				return err
			}
		}
	}
}

type server struct {
	w     *proto.Writer
	mu    sync.Mutex
	reqs  map[uint32]*request
	wg    sync.WaitGroup
	done  chan struct{} // closed after the first request in once mode
	onced bool
	// aliveSending: an Alive frame is being written.
	aliveSending atomic.Bool
	streams      streamTable // dial, accept and watch streams (stream.go)
	accepts      acceptors   // the listeners of accept requests (accept.go)
}

type request struct {
	cancel context.CancelFunc
	input  *io.PipeWriter // nil when the request takes no input
	tty    *ttyControl    // nil when the request has no terminal (exec_tty.go)
}

// lingerAfterEnd bounds how long Serve waits, once its input has ended, for
// cancelled requests to finish: their commands are killed at once, but
// writing their last output may block forever when nobody reads it.
const lingerAfterEnd = 5 * time.Second

// waitRequests waits for running requests, at most d.
func (s *server) waitRequests(d time.Duration) {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func (s *server) dispatch(ctx context.Context, f proto.Frame, once bool) error {
	switch f.Kind {
	case proto.KindRequest:
		req, bad := decodeRequest(f.Payload)
		if bad != nil {
			return s.result(f.ID, "", &proto.Result{Error: bad})
		}
		s.mu.Lock()
		if _, dup := s.reqs[f.ID]; dup || s.onced {
			s.mu.Unlock()
			return fmt.Errorf("helper: request %d not accepted", f.ID)
		}
		rctx, cancel := context.WithCancel(ctx)
		rq := &request{cancel: cancel}
		if req.TTY != nil {
			rq.tty = &ttyControl{}
			rctx = withTTY(rctx, rq.tty)
		}
		var in io.Reader
		if req.TakesInput() {
			pr, pw := io.Pipe()
			rq.input, in = pw, pr
		}
		s.reqs[f.ID] = rq
		s.onced = once
		s.mu.Unlock()
		announceRequest(req.Op) // serve_procs.go
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			send := func(kind proto.Kind, p []byte) error { return s.w.WriteFrame(kind, f.ID, p) }
			var held *heldOutput
			if proto.HoldsOutput(req.Op) {
				held = &heldOutput{w: s.w, id: f.ID}
				send = held.send
			}
			res := s.handleRequest(rctx, f.ID, req, in, send)
			if in != nil {
				in.(*io.PipeReader).Close()
			}
			s.mu.Lock()
			delete(s.reqs, f.ID)
			s.mu.Unlock()
			announceRequest(req.Op)
			cancel()
			if held != nil {
				_ = held.result(encodeResult(req.Op, res))
			} else {
				_ = s.result(f.ID, req.Op, res)
			}
			if req.Op == proto.OpProcStart && res.Error == nil && res.Proc != nil {
				tableConn.launched(res.Proc.Info.ID) // serve_procs.go
			}
			if once {
				close(s.done)
			}
		}()
	case proto.KindInput:
		s.mu.Lock()
		rq := s.reqs[f.ID]
		s.mu.Unlock()
		if rq == nil || rq.input == nil {
			return nil // late input for a finished request
		}
		if len(f.Payload) == 0 {
			return rq.input.Close()
		}
		// Blocks while the command does not read; a cancel or the end of the
		// connection kills the command, which unblocks this write.
		_, _ = rq.input.Write(f.Payload)
	case proto.KindResize:
		s.resize(f)
	case proto.KindData, proto.KindWindow, proto.KindEOF:
		s.streams.frame(f) // never blocks (stream.go)
	case proto.KindCancel:
		s.mu.Lock()
		if rq := s.reqs[f.ID]; rq != nil {
			rq.cancel()
		}
		s.mu.Unlock()
	default:
		return fmt.Errorf("helper: unexpected frame kind %q", f.Kind)
	}
	return nil
}

// heartbeat is how often a helper with requests running tells PID 1 that
// the sandbox is in use (see Init's idle timeout).
const heartbeat = 100 * time.Millisecond

// keepAlive announces activity to PID 1 every heartbeat while requests
// run, and to the library every proto.AliveInterval, until ctx ends. (An
// idle shared channel is not activity: a sandbox whose owner keeps it open
// but sends nothing still times out.)
func (s *server) keepAlive(ctx context.Context) {
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	lastAlive := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			busy := len(s.reqs) > 0
			s.mu.Unlock()
			if !busy {
				continue
			}
			announce()
			// The write may block while the library does not read; PID 1
			// must still hear of the activity meanwhile.
			if time.Since(lastAlive) >= proto.AliveInterval && s.aliveSending.CompareAndSwap(false, true) {
				lastAlive = time.Now()
				go func() {
					_ = s.w.WriteFrame(proto.KindAlive, 0, nil)
					s.aliveSending.Store(false)
				}()
			}
		}
	}
}

func (s *server) result(id uint32, op string, res *proto.Result) error {
	return s.w.WriteFrame(proto.KindResult, id, encodeResult(op, res))
}

// encodeResult encodes res for op (fitResult), or the error that it cannot.
func encodeResult(op string, res *proto.Result) []byte {
	b, err := fitResult(op, res)
	if err != nil {
		b, _ = json.Marshal(proto.Result{Error: proto.ErrorOf(err)})
	}
	return b
}

// maxErrorMessage bounds an error's message in a Result.
const maxErrorMessage = 4 << 10

// fitResult encodes res for op within what the library accepts
// (proto.MaxResult, proto.MaxItems), which it would otherwise refuse: grep
// matches and glob entries are cut (Truncated, as a max count would), an
// error's message is shortened, anything else too large is an error.
func fitResult(op string, res *proto.Result) ([]byte, error) {
	if e := res.Error; e != nil && len(e.Message) > maxErrorMessage {
		res.Error = &proto.Error{Code: e.Code, Message: e.Message[:maxErrorMessage] + "..."}
	}
	if len(res.Matches) > proto.MaxItems {
		res.Matches, res.Truncated = res.Matches[:proto.MaxItems], true
	}
	if op == proto.OpGlob && len(res.Entries) > proto.MaxItems {
		res.Entries, res.Truncated = res.Entries[:proto.MaxItems], true
	}
	if n := max(len(res.Entries), len(res.Stats)); n > proto.MaxItems {
		return nil, fmt.Errorf("%w: %d entries, more than one answer holds (%d)", errTooLarge, n, proto.MaxItems)
	}
	limit := proto.MaxResult(op)
	for {
		b, err := json.Marshal(res)
		if err != nil || len(b) <= limit {
			return b, err
		}
		cut := *res
		switch keep := func(n int) int { return int(int64(n) * int64(limit) / int64(len(b)) * 9 / 10) }; {
		case len(res.Matches) > 0:
			cut.Matches = res.Matches[:keep(len(res.Matches))]
		case op == proto.OpGlob && len(res.Entries) > 0:
			cut.Entries = res.Entries[:keep(len(res.Entries))]
		default:
			return nil, fmt.Errorf("%w: the result (%d bytes) exceeds what one answer holds (%d bytes); ask for less", errTooLarge, len(b), limit)
		}
		cut.Truncated = true
		res = &cut
	}
}

// errTooLarge: an answer the protocol cannot carry.
var errTooLarge = errors.New("result too large")
