package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Dial connects to address inside the sandbox, as a process in the
// container would: the helper dials in the container's network namespace
// and carries the connection over the shared channel, so it works with
// WithNetworkMode("none") and under the secure profile, where nothing
// outside can reach the container. network is "tcp", "tcp4", "tcp6" or
// "unix" (address is then a socket's path); a host name resolves inside
// the sandbox ("localhost:8080").
//
// ctx bounds the connect only, as with net.Dialer.DialContext. The
// returned *Conn is a net.Conn with deadlines and CloseWrite; each
// connection buffers at most 1 MiB from the sandbox that its reader has not
// read (the sender waits beyond that), so a slow reader stalls its own
// connection and nothing else. A refused connection is a *net.OpError
// that matches syscall.ECONNREFUSED; a connection that the sandbox's side
// resets (its server died) reads an error matching syscall.ECONNRESET,
// not io.EOF. A helper older than this library answers ErrProtocolVersion.
func (s *Sandbox) Dial(ctx context.Context, network, address string) (_ net.Conn, err error) {
	ctx, op := s.begin(ctx, "Dial")
	defer op.end(&err)
	op.text("address", network+" "+address)
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: network, Addr: stringAddr{network, address}, Err: err}
	}
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return nil, opErr(fmt.Errorf("%w: unsupported network %q (tcp, tcp4, tcp6 or unix)", ErrInvalidOption, network))
	}
	if address == "" {
		return nil, opErr(fmt.Errorf("%w: missing address", ErrInvalidOption))
	}
	req := proto.Request{Op: proto.OpDial, Network: network, Address: address}
	var (
		tok    [proto.DirectTokenSize]byte
		direct chan *net.UnixConn
	)
	if ps := s.ports; ps != nil {
		var ok bool
		if req.Token, tok, direct, ok = ps.expect(); ok {
			req.Direct = portsSocket
		}
	}
	st, err := s.openStream(ctx, req)
	var dc *net.UnixConn
	if direct != nil {
		dc = s.ports.forget(tok, direct)
	}
	if err != nil || !st.open.Direct {
		if dc != nil {
			dc.Close() // not taken: the helper goes on with the stream
			dc = nil
		}
	}
	if err != nil {
		return nil, err
	}
	select {
	case <-st.openC:
	default: // ended before it opened: the connect failed
		return nil, opErr(dialErr(st.res))
	}
	if st.open.Direct && dc == nil {
		st.close()
		return nil, opErr(fmt.Errorf("%w: a direct connection it did not make", errStreamLied))
	}
	c := newConn(st, dc, network)
	if dc != nil {
		go c.watchDirect()
	}
	if c.remote == nil {
		c.remote = stringAddr{network, address}
	}
	return c, nil
}

// newConn is the connection of an opened dial or accept stream (over the
// port socket dc, if not nil), with the addresses the helper gave.
func newConn(st *stream, dc *net.UnixConn, network string) *Conn {
	return &Conn{st: st, dc: dc, network: network, rdl: newDeadline(), wdl: newDeadline(),
		local: parseAddr(network, st.open.Local), remote: parseAddr(network, st.open.Remote)}
}

// Conn is a connection to a port inside the sandbox, from Dial. Its
// addresses are the connection's in the sandbox.
type Conn struct {
	st            *stream
	dc            *net.UnixConn // the connection over the port socket, if any
	network       string
	local, remote net.Addr
	rdl, wdl      *deadline
	rmu, wmu      sync.Mutex
}

var _ net.Conn = (*Conn)(nil)

// Read reads data the sandbox's side sent. After that side's close it
// returns io.EOF; after a reset, an error matching syscall.ECONNRESET.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.dc != nil {
		return c.readDirect(p)
	}
	n, err := c.st.read(p, c.rdl)
	return n, c.opErr("read", err)
}

// Write sends p to the sandbox's side, waiting while the connection's
// window there is full (until the write deadline).
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dc != nil {
		return c.writeDirect(p)
	}
	n, err := c.st.write(p, c.wdl)
	return n, c.opErr("write", err)
}

// CloseWrite half-closes the connection: the sandbox's side reads EOF,
// and data keeps flowing the other way.
func (c *Conn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dc != nil {
		return c.directErr("close", c.dc.CloseWrite())
	}
	return c.opErr("close", c.st.closeWrite())
}

// Close closes the connection (the sandbox's side sees it closed); data
// not yet read is dropped. It does not wait for the sandbox.
func (c *Conn) Close() error {
	c.st.close()
	if c.dc != nil {
		c.dc.Close()
	}
	return nil
}

// LocalAddr is the connection's local address inside the sandbox.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the address it is connected to, inside the sandbox.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	if c.dc != nil {
		_ = c.dc.SetDeadline(t)
	}
	return nil
}

// SetReadDeadline sets the read deadline: a Read waiting past it fails
// with an error matching os.ErrDeadlineExceeded.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.rdl.set(t)
	if c.dc != nil {
		_ = c.dc.SetReadDeadline(t)
	}
	return nil
}

// SetWriteDeadline sets the write deadline, likewise.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.wdl.set(t)
	if c.dc != nil {
		_ = c.dc.SetWriteDeadline(t)
	}
	return nil
}

var (
	errTimeout     = os.ErrDeadlineExceeded
	errBrokenPipe  = syscall.EPIPE
	errResetInside = errors.New("in the sandbox")
)

// opErr wraps a stream error as net does.
func (c *Conn) opErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case err == io.EOF:
		return err
	}
	c.st.mu.Lock()
	res, endErr := c.st.res, c.st.endErr
	c.st.mu.Unlock()
	if res != nil && err == endErr {
		err = fmt.Errorf("%w (%w: %s)", codeErrno(res.Code, syscall.ECONNRESET), errResetInside, res.Message)
	}
	return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: err}
}

// codeErrno maps a stream's error code to its errno.
func codeErrno(code string, otherwise syscall.Errno) syscall.Errno {
	switch code {
	case proto.CodeRefused:
		return syscall.ECONNREFUSED
	case proto.CodeTimedOut:
		return syscall.ETIMEDOUT
	case proto.CodeUnreachable:
		return syscall.EHOSTUNREACH
	case proto.CodeNotFound:
		return syscall.ENOENT
	case proto.CodePermission:
		return syscall.EACCES
	}
	return otherwise
}

// dialErr is the error of a failed connect in the sandbox.
func dialErr(e *proto.Error) error {
	if e == nil {
		return fmt.Errorf("%w: the stream ended before it opened", ErrHelper)
	}
	switch e.Code {
	case proto.CodeRefused, proto.CodeTimedOut, proto.CodeUnreachable, proto.CodeNotFound, proto.CodePermission:
		return fmt.Errorf("%w (in the sandbox: %s)", codeErrno(e.Code, 0), e.Message)
	case proto.CodeBadRequest:
		return fmt.Errorf("%w: %s", ErrInvalidOption, e.Message)
	}
	return fmt.Errorf("in the sandbox: %s", e.Message)
}

// parseAddr turns the helper's address string into a net.Addr.
func parseAddr(network, s string) net.Addr {
	if s == "" {
		return nil
	}
	if network == "unix" {
		return &net.UnixAddr{Name: s, Net: "unix"}
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return net.TCPAddrFromAddrPort(ap)
	}
	return stringAddr{network, s}
}

// stringAddr is an address as given.
type stringAddr struct{ net, addr string }

func (a stringAddr) Network() string { return a.net }
func (a stringAddr) String() string  { return a.addr }

// deadline is a settable deadline whose channel closes when it passes
// (as net.Pipe's).
type deadline struct {
	mu    sync.Mutex
	timer *time.Timer
	c     chan struct{}
}

func newDeadline() *deadline { return &deadline{c: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.c // the timer fired: wait for it to have closed c
	}
	d.timer = nil
	closed := isClosed(d.c)
	switch dur := time.Until(t); {
	case t.IsZero():
		if closed {
			d.c = make(chan struct{})
		}
	case dur > 0:
		if closed {
			d.c = make(chan struct{})
		}
		c := d.c
		d.timer = time.AfterFunc(dur, func() { close(c) })
	case !closed:
		close(d.c)
	}
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.c
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Conn over the port socket (ports_socket.go) reads and writes a unix
// connection to the helper, which copies it to and from the connection in
// the sandbox; the stream on the shared channel only opens and ends it.

// directResultWait bounds how long a Read that met EOF waits for the
// stream's Result, which says whether the sandbox's side closed or failed
// (a reset); the helper sends it right after closing its side.
const directResultWait = 2 * time.Second

// watchDirect closes the direct connection when its stream ends with an
// error (a reset in the sandbox, the channel broke, the sandbox closed):
// a Read or Write waiting on it then returns that error, as with a stream.
// A clean end leaves it to be read to its EOF.
func (c *Conn) watchDirect() {
	select {
	case <-c.st.ended:
	case <-c.st.closedC:
		return
	}
	c.st.mu.Lock()
	failed := c.st.endErr != nil
	c.st.mu.Unlock()
	if failed {
		c.dc.Close()
	}
}

// directEnd is the stream's error once it ended with one (waiting for the
// end up to wait, unless the helper said first, with KindEOF, that the
// sandbox's side closed cleanly), or nil.
func (c *Conn) directEnd(wait time.Duration) error {
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
	waiting:
		for {
			c.st.mu.Lock()
			eof := c.st.eof
			c.st.mu.Unlock()
			if eof {
				break
			}
			select {
			case <-c.st.ended:
				break waiting
			case <-c.st.closedC:
				break waiting
			case <-t.C:
				break waiting
			case <-c.st.rwake:
			}
		}
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	select {
	case <-c.st.ended:
		return c.st.endErr
	default:
		return nil
	}
}

// directErr turns an error of the unix connection into the Conn's: the
// stream's reset when it ended with one, the deadline and closed errors
// as net gives them, with the Conn's addresses.
func (c *Conn) directErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, net.ErrClosed) && c.isClosed():
		return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: net.ErrClosed}
	case errors.Is(err, errTimeout):
		return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: errTimeout}
	}
	if end := c.directEnd(directResultWait); end != nil {
		return c.opErr(op, end)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: err}
}

// isClosed reports whether Close was called.
func (c *Conn) isClosed() bool {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return c.st.closed
}

func (c *Conn) readDirect(p []byte) (int, error) {
	n, err := c.dc.Read(p)
	if err == io.EOF {
		// The sandbox's side closed, or failed: the Result says which.
		if end := c.directEnd(directResultWait); end != nil {
			return n, c.opErr("read", end)
		}
		return n, io.EOF
	}
	return n, c.directErr("read", err)
}

func (c *Conn) writeDirect(p []byte) (int, error) {
	n, err := c.dc.Write(p)
	return n, c.directErr("write", err)
}
