package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Forward listens on the host at hostAddr and forwards every connection
// it accepts to port on 127.0.0.1 inside the sandbox, through Dial (so it
// works with network "none" too). hostAddr is "HOST:PORT", ":PORT" or ""
// (an empty host is 127.0.0.1, not every interface; port 0 or none picks a
// free one: see Forwarder.Addr). Forwarding ends when ctx ends or Close is
// called; both also close the connections it carries. A connection the
// sandbox refuses or resets is reset on the host.
func (s *Sandbox) Forward(ctx context.Context, hostAddr string, port int) (_ *Forwarder, err error) {
	ctx, op := s.begin(ctx, "Forward")
	defer op.end(&err)
	op.int("sandbox.port", int64(port))
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("%w: forward: port %d out of range", ErrInvalidOption, port)
	}
	addr, err := listenAddr(hostAddr)
	if err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	op.text("address", ln.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	f := &Forwarder{s: s, ln: ln, ctx: ctx, cancel: cancel, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go f.accept()
	go func() {
		<-ctx.Done()
		f.shut()
	}()
	return f, nil
}

// listenAddr completes a host address for Forward.
func listenAddr(a string) (string, error) {
	if a == "" {
		return "127.0.0.1:0", nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		host, port = a, "0" // a host alone
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%w: forward: bad host address %q", ErrInvalidOption, a)
	}
	return net.JoinHostPort(host, port), nil
}

// Forwarder is a port forward from the host into the sandbox (Forward).
type Forwarder struct {
	s      *Sandbox
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	target string
	once   sync.Once
	done   chan struct{} // closed when the forward ended
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Addr is the address the forward listens on, on the host.
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }

// Close stops forwarding and closes the connections it carries.
func (f *Forwarder) Close() (err error) {
	op := f.s.beginDetached("Forwarder.Close")
	defer op.end(&err)
	op.text("address", f.ln.Addr().String())
	f.cancel()
	f.shut()
	return nil
}

// Done is closed once the forward ended (its context, Close).
func (f *Forwarder) Done() <-chan struct{} { return f.done }

func (f *Forwarder) shut() {
	f.once.Do(func() {
		f.ln.Close()
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		go func() {
			f.wg.Wait()
			close(f.done)
		}()
	})
}

// track adds c to the open connections, or closes it when the forward ended.
func (f *Forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

func (f *Forwarder) accept() {
	for {
		hc, err := f.ln.Accept()
		if err != nil {
			if f.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				f.cancel() // the listener failed: the forward is over
				f.shut()
			}
			return
		}
		if !f.track(hc) {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(hc)
			sc, err := f.s.Dial(f.ctx, "tcp", f.target)
			if err != nil {
				reset(hc)
				return
			}
			if !f.track(sc) {
				return
			}
			defer f.untrack(sc)
			if c, ok := sc.(*Conn); ok && c.dc != nil {
				spliceDirect(hc, c)
				return
			}
			splice(hc, sc)
		}()
	}
}

// splice copies both ways, passing half-closes on, until both directions
// ended; a failed direction resets both connections.
func splice(a, b net.Conn) {
	cp := func(dst, src net.Conn) func() error {
		return func() error {
			if _, err := io.Copy(dst, src); err != nil {
				return err
			}
			return closeWrite(dst)
		}
	}
	both(cp(a, b), cp(b, a), func() { reset(a); reset(b) })
}

// spliceDirect is splice for a connection over the port socket: the bytes
// go between the host's connection and the port socket's, which the
// kernel moves itself when the host's is TCP (splice(2), through
// TCPConn.ReadFrom and WriteTo), not through c's reads and writes. An end
// of the sandbox's side that was a reset (the stream's Result) resets the
// host's connection, as c's Read would say.
func spliceDirect(hc net.Conn, c *Conn) {
	toHost := func() error {
		if _, err := io.Copy(hc, c.dc); err != nil {
			return err
		}
		if err := c.directEnd(directResultWait); err != nil {
			return err
		}
		return closeWrite(hc)
	}
	toSandbox := func() error {
		if _, err := io.Copy(c.dc, hc); err != nil {
			return err
		}
		return c.dc.CloseWrite()
	}
	both(toHost, toSandbox, func() { reset(hc); c.Close() })
}

// both runs a connection's two directions at once until both ended,
// calling failed for each that failed.
func both(one, other func() error, failed func()) {
	errs := make(chan error, 2)
	go func() { errs <- one() }()
	go func() { errs <- other() }()
	for range 2 {
		if err := <-errs; err != nil {
			failed()
		}
	}
}

func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// reset closes c, with a TCP reset when it is a host TCP connection.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// HTTPClient returns an *http.Client whose connections are made inside
// the sandbox (through Dial): "http://localhost:8000/" is a server in the
// sandbox, also with network "none". For previews and health checks. Its
// idle connections close after 30 s (an open connection keeps the
// sandbox's idle timeout from running); a request's context bounds it as
// usual. Its Transport is an *http.Transport, to adjust as needed.
func (s *Sandbox) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           s.Dial,
		Proxy:                 nil, // a host's proxy cannot reach the sandbox
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}
