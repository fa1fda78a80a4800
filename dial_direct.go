package sandbox

import (
	"errors"
	"io"
	"net"
	"time"
)

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
// end up to wait), or nil.
func (c *Conn) directEnd(wait time.Duration) error {
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-c.st.ended:
		case <-c.st.closedC:
		case <-t.C:
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
