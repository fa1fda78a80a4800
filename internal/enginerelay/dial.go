package enginerelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox/engine"
)

// Dial returns the engine served at addr (a unix socket's path), as an
// engine.Pauser and engine.Stopper only if the served engine is one, and
// as an engine.Meter always.
func Dial(addr string) (engine.Engine, error) {
	c := &client{addr: addr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res result
	if err := c.unary(ctx, &request{Op: "hello"}, &res); err != nil {
		return nil, fmt.Errorf("enginerelay: %s: %w", addr, err)
	}
	if res.Hello == nil {
		return nil, fmt.Errorf("enginerelay: %s: no hello", addr)
	}
	c.name = res.Hello.Name
	switch {
	case res.Hello.Pauser && res.Hello.Stopper:
		return &pauseStopClient{pauserClient{c}, stopperClient{c}}, nil
	case res.Hello.Pauser:
		return &pauserClient{c}, nil
	case res.Hello.Stopper:
		return &stopperClient{c}, nil
	}
	return c, nil
}

// client is the relayed engine.
type client struct {
	addr string
	name string
}

type pauserClient struct{ *client }
type stopperClient struct{ *client }
type pauseStopClient struct {
	pauserClient
	stopperClient
}

func (c *pauseStopClient) Name() string { return c.pauserClient.Name() }
func (c *pauseStopClient) Close() error { return nil }
func (c *pauseStopClient) Create(ctx context.Context, s *engine.Spec) (engine.Info, error) {
	return c.pauserClient.Create(ctx, s)
}
func (c *pauseStopClient) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	return c.pauserClient.Exec(ctx, id, argv, user)
}
func (c *pauseStopClient) Inspect(ctx context.Context, id string) (engine.Info, error) {
	return c.pauserClient.Inspect(ctx, id)
}
func (c *pauseStopClient) List(ctx context.Context, l map[string]string) ([]engine.Info, error) {
	return c.pauserClient.List(ctx, l)
}
func (c *pauseStopClient) Remove(ctx context.Context, id string) error {
	return c.pauserClient.Remove(ctx, id)
}
func (c *pauseStopClient) CopyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	return c.pauserClient.CopyTo(ctx, id, dir, tar)
}
func (c *pauseStopClient) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return c.pauserClient.CopyFrom(ctx, id, path)
}
func (c *pauseStopClient) Usage(ctx context.Context, id string) (engine.Usage, error) {
	return c.pauserClient.Usage(ctx, id)
}

var (
	_ engine.Meter = (*client)(nil)
	_ engine.Meter = (*pauserClient)(nil)
	_ engine.Meter = (*stopperClient)(nil)
	_ engine.Meter = (*pauseStopClient)(nil)
)

// Pause pauses id.
func (c pauserClient) Pause(ctx context.Context, id string) error {
	return c.unary(ctx, &request{Op: "pause", ID: id}, &result{})
}

// Unpause unpauses id.
func (c pauserClient) Unpause(ctx context.Context, id string) error {
	return c.unary(ctx, &request{Op: "unpause", ID: id}, &result{})
}

// Stop stops id.
func (c stopperClient) Stop(ctx context.Context, id string, grace time.Duration) error {
	return c.unary(ctx, &request{Op: "stop", ID: id, Grace: grace}, &result{})
}

// Start starts id again.
func (c stopperClient) Start(ctx context.Context, id string) error {
	return c.unary(ctx, &request{Op: "start", ID: id}, &result{})
}

func (c *client) Name() string { return c.name }

// Close does nothing: the served engine is its server's.
func (c *client) Close() error { return nil }

// call dials, sends req and returns the connection, closed when ctx ends
// until stop is called (stop reports whether it was not closed yet).
func (c *client) call(ctx context.Context, req *request) (net.Conn, func() bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("enginerelay: %w: %w", engine.ErrUnreachable, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	if err := writeJSON(conn, kindHeader, req); err != nil {
		stop()
		conn.Close()
		return nil, nil, c.connErr(ctx, err)
	}
	return conn, stop, nil
}

// connErr is ctx's error if it ended, else err as the relay's failure.
func (c *client) connErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("enginerelay: connection to %s: %w", c.addr, err)
}

// unary makes a call without streams.
func (c *client) unary(ctx context.Context, req *request, res *result) error {
	conn, stop, err := c.call(ctx, req)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer stop()
	if err := readJSON(conn, kindResult, res); err != nil {
		return c.connErr(ctx, err)
	}
	return res.Err.err()
}

// Create creates a sandbox.
func (c *client) Create(ctx context.Context, spec *engine.Spec) (engine.Info, error) {
	var res result
	ws := &wireSpec{Spec: spec, Helper: wireHelper{Dir: spec.Helper.Dir, Path: spec.Helper.Path}}
	err := c.unary(ctx, &request{Op: "create", Spec: ws}, &res)
	return info(res.Info), err
}

func info(i *engine.Info) engine.Info {
	if i == nil {
		return engine.Info{}
	}
	return *i
}

// Inspect describes id.
func (c *client) Inspect(ctx context.Context, id string) (engine.Info, error) {
	var res result
	err := c.unary(ctx, &request{Op: "inspect", ID: id}, &res)
	return info(res.Info), err
}

// List lists by labels.
func (c *client) List(ctx context.Context, labels map[string]string) ([]engine.Info, error) {
	var res result
	err := c.unary(ctx, &request{Op: "list", Labels: labels}, &res)
	return res.Infos, err
}

// Usage measures id, if the served engine can (else an error wrapping
// errors.ErrUnsupported).
func (c *client) Usage(ctx context.Context, id string) (engine.Usage, error) {
	var res result
	if err := c.unary(ctx, &request{Op: "usage", ID: id}, &res); err != nil {
		return engine.Usage{}, err
	}
	if res.Usage == nil {
		return engine.Usage{}, fmt.Errorf("enginerelay: usage of %s: no answer", id)
	}
	return *res.Usage, nil
}

// Remove removes id.
func (c *client) Remove(ctx context.Context, id string) error {
	return c.unary(ctx, &request{Op: "remove", ID: id}, &result{})
}

// CopyTo sends tar to dir of id.
func (c *client) CopyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	conn, stop, err := c.call(ctx, &request{Op: "copyto", ID: id, Dir: dir})
	if err != nil {
		return err
	}
	defer conn.Close()
	defer stop()
	sent := make(chan error, 1)
	go func() {
		buf := make([]byte, chunk)
		for {
			n, err := tar.Read(buf)
			if n > 0 {
				if werr := writeFrame(conn, kindData, buf[:n]); werr != nil {
					sent <- nil // the result says why
					return
				}
			}
			if err == io.EOF {
				_ = writeFrame(conn, kindEnd, nil)
				sent <- nil
				return
			}
			if err != nil {
				conn.Close() // the server sees a truncated input
				sent <- err
				return
			}
		}
	}()
	var res result
	rerr := readJSON(conn, kindResult, &res)
	conn.Close()
	if serr := <-sent; serr != nil {
		return serr
	}
	if rerr != nil {
		return c.connErr(ctx, rerr)
	}
	return res.Err.err()
}

// CopyFrom returns a tar archive of path in id.
func (c *client) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	conn, stop, err := c.call(ctx, &request{Op: "copyfrom", ID: id, Path: path})
	if err != nil {
		return nil, err
	}
	var res result
	if err := readJSON(conn, kindResult, &res); err != nil {
		stop()
		conn.Close()
		return nil, c.connErr(ctx, err)
	}
	if err := res.Err.err(); err != nil {
		stop()
		conn.Close()
		return nil, err
	}
	return &tarReader{conn: conn, stop: stop, ctx: ctx, c: c}, nil
}

// tarReader reads CopyFrom's data frames; ctx still closes it (as
// Docker's archive stream ends with its request's context).
type tarReader struct {
	c    *client
	ctx  context.Context
	conn net.Conn
	stop func() bool
	buf  []byte
	left []byte
	err  error
}

func (r *tarReader) Read(p []byte) (int, error) {
	for len(r.left) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		kind, b, err := readFrame(r.conn, r.buf)
		switch {
		case err != nil:
			r.err = r.c.connErr(r.ctx, err)
		case kind == kindData:
			r.buf = b[:0]
			r.left = b
		case kind == kindEnd:
			var ei *errInfo
			if jerr := json.Unmarshal(b, &ei); jerr != nil {
				r.err = jerr
			} else if r.err = ei.err(); r.err == nil {
				r.err = io.EOF
			}
		default:
			r.err = fmt.Errorf("enginerelay: frame %q in an archive", kind)
		}
	}
	n := copy(p, r.left)
	r.left = r.left[n:]
	return n, nil
}

func (r *tarReader) Close() error {
	r.stop()
	return r.conn.Close()
}

// Exec starts argv in id.
func (c *client) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	conn, stop, err := c.call(ctx, &request{Op: "exec", ID: id, Argv: argv, User: user})
	if err != nil {
		return nil, err
	}
	var res result
	if err := readJSON(conn, kindResult, &res); err != nil {
		stop()
		conn.Close()
		return nil, c.connErr(ctx, err)
	}
	if !stop() { // ctx ended as it started: the stream is closed
		conn.Close()
		return nil, ctx.Err()
	}
	if err := res.Err.err(); err != nil {
		conn.Close()
		return nil, err
	}
	s := &stream{conn: conn}
	s.stdout, s.outW = io.Pipe()
	s.stderr, s.errW = io.Pipe()
	go s.demux()
	return s, nil
}

// stream is a relayed Exec stream.
type stream struct {
	conn           net.Conn
	mu             sync.Mutex // writes
	closedW        bool
	stdout, stderr *io.PipeReader
	outW, errW     *io.PipeWriter
}

func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closedW {
		return 0, errors.New("enginerelay: write after CloseWrite")
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), chunk)
		if err := writeFrame(s.conn, kindData, p[:k]); err != nil {
			return n, err
		}
		n += k
		p = p[k:]
	}
	return n, nil
}

func (s *stream) CloseWrite() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closedW {
		return nil
	}
	s.closedW = true
	return writeFrame(s.conn, kindEnd, nil)
}

func (s *stream) Stdout() io.Reader { return s.stdout }
func (s *stream) Stderr() io.Reader { return s.stderr }

func (s *stream) Close() error {
	err := s.conn.Close()
	s.outW.CloseWithError(io.ErrClosedPipe)
	s.errW.CloseWithError(io.ErrClosedPipe)
	s.stdout.CloseWithError(io.ErrClosedPipe)
	s.stderr.CloseWithError(io.ErrClosedPipe)
	return err
}

// demux feeds the output frames to the pipes: an unread one stalls the
// connection, and so the served stream (the engine's own back pressure).
func (s *stream) demux() {
	var buf []byte
	endWith := func(w *io.PipeWriter, b []byte) {
		var ei *errInfo
		if err := json.Unmarshal(b, &ei); err != nil {
			w.CloseWithError(err)
			return
		}
		w.CloseWithError(ei.err()) // nil: EOF
	}
	for {
		kind, b, err := readFrame(s.conn, buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			s.outW.CloseWithError(err)
			s.errW.CloseWithError(err)
			return
		}
		buf = b[:0]
		switch kind {
		case kindData:
			_, _ = s.outW.Write(b)
		case kindErrOut:
			_, _ = s.errW.Write(b)
		case kindEnd:
			endWith(s.outW, b)
		case kindErrEnd:
			endWith(s.errW, b)
		default:
			err := fmt.Errorf("enginerelay: frame %q in an exec stream", kind)
			s.outW.CloseWithError(err)
			s.errW.CloseWithError(err)
			return
		}
	}
}
