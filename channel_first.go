package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The first channel: New shares a one-time token with the container
// (proto.FirstChannelFile, removed once the container started), with which
// PID 1 introduces a connection to the port socket before it says it is
// ready, and waits. The first time the handle opens its shared channel, it
// writes proto.FirstChannelStart on that connection, and PID 1 starts the
// helper at its path in serve mode on it, exactly when an exec would have
// started it (a helper replaced after New is the one that serves). The
// first channel thus costs no engine exec. A connection that ends before
// the helper said anything (PID 1 gone: a Stop, a restart) is dropped and
// the channel opened otherwise (channel_direct.go); a helper that fails its
// hello fails the opening as an exec's would.

// openFirst opens the shared channel on the first channel's connection, if
// the handle still has it unused. first is false when it had none or the
// connection was dead, and the caller opens the channel otherwise.
func (s *Sandbox) openFirst() (hc *helperConn, first bool, err error) {
	s.chMu.Lock()
	c := s.first
	s.first = nil
	s.chMu.Unlock()
	if c == nil {
		return nil, false, nil
	}
	if _, err := c.Write([]byte{proto.FirstChannelStart}); err != nil {
		c.Close()
		return nil, false, nil
	}
	hctx, cancel := context.WithTimeoutCause(context.Background(), handshakeTimeout, errDaemonSilent)
	defer cancel()
	// The helper's first byte: none at all (EOF) is a dead connection.
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	b := []byte{0}
	_, rerr := io.ReadFull(c, b)
	_ = c.SetReadDeadline(time.Time{})
	switch {
	case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) || errors.Is(rerr, net.ErrClosed):
		c.Close()
		return nil, false, nil
	case errors.Is(rerr, os.ErrDeadlineExceeded):
		c.Close()
		return nil, true, s.helperErr(context.Background(), errHelperNoHello, &headBuffer{})
	case rerr != nil:
		c.Close()
		return nil, false, nil
	}
	hc, err = s.greet(context.Background(), hctx, firstStream{c, io.MultiReader(bytes.NewReader(b), c)}, &headBuffer{max: 4096})
	return hc, true, err
}

// dropFirst closes the first channel's connection if it was never used.
func (s *Sandbox) dropFirst() {
	if s.first != nil {
		s.first.Close()
		s.first = nil
	}
}

// firstStream is the first channel's connection as a helper's stream: the
// helper's standard error is /dev/null.
type firstStream struct {
	*net.UnixConn
	out io.Reader
}

func (f firstStream) Stdout() io.Reader { return f.out }
func (f firstStream) Stderr() io.Reader { return strings.NewReader("") }
