package enginerelay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/helperbin"
)

// Serve serves e on l, one call per connection, until ctx ends or l
// fails; it closes l and waits for the calls it serves. It does not close
// e.
func Serve(ctx context.Context, l net.Listener, e engine.Engine) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var conns sync.Map // net.Conn → struct{}: closed when Serve returns
	defer conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			l.Close()
			return err
		}
		conns.Store(c, struct{}{})
		wg.Go(func() {
			defer conns.Delete(c)
			defer c.Close()
			serveConn(ctx, c, e)
		})
	}
}

// serveConn serves the call on c.
func serveConn(ctx context.Context, c net.Conn, e engine.Engine) {
	var req request
	if err := readJSON(c, kindHeader, &req); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch req.Op {
	case "copyto":
		serveCopyTo(ctx, cancel, c, e, &req)
		return
	case "exec":
		serveExec(ctx, cancel, c, e, &req)
		return
	}
	// The client sends nothing more: its closing the connection cancels the call.
	go func() {
		_, _ = c.Read(make([]byte, 1))
		cancel()
	}()
	if req.Op == "copyfrom" {
		serveCopyFrom(ctx, c, e, &req)
		return
	}
	var res result
	var err error
	switch req.Op {
	case "hello":
		_, p := e.(engine.Pauser)
		_, s := e.(engine.Stopper)
		res.Hello = &hello{Name: e.Name(), Pauser: p, Stopper: s}
	case "create":
		if req.Spec == nil || req.Spec.Spec == nil {
			err = errors.New("enginerelay: create without a spec")
			break
		}
		spec := *req.Spec.Spec
		spec.Helper = engine.Helper{Dir: req.Spec.Helper.Dir, Path: req.Spec.Helper.Path, Binary: helperbin.For}
		var info engine.Info
		info, err = e.Create(ctx, &spec)
		res.Info = &info
	case "inspect":
		var info engine.Info
		info, err = e.Inspect(ctx, req.ID)
		res.Info = &info
	case "list":
		res.Infos, err = e.List(ctx, req.Labels)
	case "remove":
		err = e.Remove(ctx, req.ID)
	case "pause", "unpause":
		p, ok := e.(engine.Pauser)
		if !ok {
			err = fmt.Errorf("enginerelay: %s cannot pause: %w", e.Name(), errors.ErrUnsupported)
		} else if req.Op == "pause" {
			err = p.Pause(ctx, req.ID)
		} else {
			err = p.Unpause(ctx, req.ID)
		}
	case "stop", "start":
		s, ok := e.(engine.Stopper)
		if !ok {
			err = fmt.Errorf("enginerelay: %s cannot stop: %w", e.Name(), errors.ErrUnsupported)
		} else if req.Op == "stop" {
			err = s.Stop(ctx, req.ID, req.Grace)
		} else {
			err = s.Start(ctx, req.ID)
		}
	case "usage":
		m, ok := e.(engine.Meter)
		if !ok {
			err = fmt.Errorf("enginerelay: %s cannot measure a sandbox's usage: %w", e.Name(), errors.ErrUnsupported)
			break
		}
		var u engine.Usage
		u, err = m.Usage(ctx, req.ID)
		res.Usage = &u
	default:
		err = fmt.Errorf("enginerelay: unknown operation %q", req.Op)
	}
	res.Err = encodeErr(err)
	_ = writeJSON(c, kindResult, &res)
}

// inputReader reads the client's data frames up to its end frame; then
// (in drain) the connection's end, which cancels the call.
type inputReader struct {
	c    net.Conn
	buf  []byte
	left []byte
	err  error
}

func (r *inputReader) Read(p []byte) (int, error) {
	for len(r.left) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		kind, b, err := readFrame(r.c, r.buf)
		r.buf = b[:0]
		switch {
		case err != nil:
			r.err = fmt.Errorf("enginerelay: client gone: %w", err)
			if errors.Is(err, io.EOF) {
				r.err = io.ErrUnexpectedEOF
			}
		case kind == kindEnd:
			r.err = io.EOF
		case kind == kindData:
			r.left = b
		default:
			r.err = fmt.Errorf("enginerelay: frame %q in the input", kind)
		}
	}
	n := copy(p, r.left)
	r.left = r.left[n:]
	return n, nil
}

// drain waits for the connection to end after the input, then cancels.
func (r *inputReader) drain(cancel context.CancelFunc) {
	for r.err == nil {
		_, _ = r.Read(make([]byte, chunk))
	}
	if r.err == io.EOF {
		_, _ = r.c.Read(make([]byte, 1))
	}
	cancel()
}

func serveCopyTo(ctx context.Context, cancel context.CancelFunc, c net.Conn, e engine.Engine, req *request) {
	pr, pw := io.Pipe()
	in := &inputReader{c: c}
	go func() {
		_, err := io.Copy(pw, in)
		pw.CloseWithError(err) // nil: EOF
		in.drain(cancel)
	}()
	err := e.CopyTo(ctx, req.ID, req.Dir, pr)
	pr.CloseWithError(errors.New("enginerelay: CopyTo returned"))
	_ = writeJSON(c, kindResult, &result{Err: encodeErr(err)})
}

func serveCopyFrom(ctx context.Context, c net.Conn, e engine.Engine, req *request) {
	rc, err := e.CopyFrom(ctx, req.ID, req.Path)
	if err != nil {
		_ = writeJSON(c, kindResult, &result{Err: encodeErr(err)})
		return
	}
	defer rc.Close()
	if err := writeJSON(c, kindResult, &result{}); err != nil {
		return
	}
	err = copyOut(c, nil, kindData, rc)
	if err != nil && errors.Is(err, errWrite) {
		return
	}
	_ = writeJSON(c, kindEnd, encodeErr(err))
}

var errWrite = errors.New("enginerelay: writing to the client")

// copyOut copies r into data frames of kind on c (under mu when not nil)
// until r ends: nil at io.EOF, r's error, or one wrapping errWrite.
func copyOut(c net.Conn, mu *sync.Mutex, kind byte, r io.Reader) error {
	buf := make([]byte, chunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if mu != nil {
				mu.Lock()
			}
			werr := writeFrame(c, kind, buf[:n])
			if mu != nil {
				mu.Unlock()
			}
			if werr != nil {
				return fmt.Errorf("%w: %w", errWrite, werr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func serveExec(ctx context.Context, cancel context.CancelFunc, c net.Conn, e engine.Engine, req *request) {
	// The client sends nothing before the result: a read that ends before
	// it means the client went away, which cancels the start.
	in := &inputReader{c: c}
	gone := make(chan struct{})
	go func() {
		_, _ = in.peek()
		close(gone)
	}()
	started := make(chan struct{})
	go func() {
		select {
		case <-gone:
			if in.err != nil && in.err != io.EOF {
				cancel()
			}
		case <-started:
		}
	}()
	s, err := e.Exec(ctx, req.ID, req.Argv, req.User)
	close(started)
	if err != nil {
		_ = writeJSON(c, kindResult, &result{Err: encodeErr(err)})
		return
	}
	defer s.Close()
	var mu sync.Mutex // the writers of frames
	mu.Lock()
	werr := writeJSON(c, kindResult, &result{})
	mu.Unlock()
	if werr != nil {
		return
	}
	// Stdin: the client's data frames; its end frame closes stdin; the
	// connection's end closes the stream.
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-gone
		if _, err := io.Copy(s, in); err == nil {
			_ = s.CloseWrite()
		}
		discard := make([]byte, chunk)
		for in.err == nil { // stdin failed (the process ended it): the rest is dropped
			_, _ = in.Read(discard)
		}
		if in.err == io.EOF {
			_, _ = c.Read(discard[:1])
		}
		s.Close()
	}()
	var wg sync.WaitGroup
	out := func(kind, end byte, r io.Reader) {
		defer wg.Done()
		err := copyOut(c, &mu, kind, r)
		if errors.Is(err, errWrite) {
			s.Close()
			return
		}
		mu.Lock()
		_ = writeJSON(c, end, encodeErr(err))
		mu.Unlock()
	}
	wg.Add(2)
	go out(kindData, kindEnd, s.Stdout())
	go out(kindErrOut, kindErrEnd, s.Stderr())
	wg.Wait()
	// The output ended: the call lasts until the client closes.
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// peek blocks until the first input frame or the input's end is read.
func (r *inputReader) peek() (int, error) {
	for len(r.left) == 0 && r.err == nil {
		kind, b, err := readFrame(r.c, r.buf)
		switch {
		case err != nil:
			r.err = io.ErrUnexpectedEOF
		case kind == kindEnd:
			r.err = io.EOF
		case kind == kindData:
			r.left = append([]byte(nil), b...)
		default:
			r.err = fmt.Errorf("enginerelay: frame %q in the input", kind)
		}
	}
	return len(r.left), r.err
}
