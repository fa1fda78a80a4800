package sandbox

import (
	"context"
	"io"
	"net"
	"path"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// A sandbox with a port socket (ports_socket.go) opens its shared channel
// over that socket when it can: the library execs the helper copy it shared
// with the container (read-only at portsDir) in proto.DirectServeMode and
// gives it a token on its standard input; the copy connects to the port
// socket with the token and, once the library took the connection, executes
// the helper at its usual path in serve mode on it. The helper that serves
// is the one at helperPath, started by an exec, as for a channel on the
// exec's stream; only its frames no longer pass through the engine (the
// daemon and the runtime's shim copy every byte of an exec's stream). Its
// standard error is still the exec's. If no connection comes (the copy
// missing or failing, the socket gone, a runtime that keeps the container
// from host sockets: gVisor without --host-uds=open), the channel opens on
// an exec's stream, as without a port socket, and so does every later
// opening for the handle; once the connection is there, a helper
// that fails its hello fails the opening as an exec's does.

// directChannelWait bounds the wait for the copy's connection, past which
// the channel is opened on an exec's stream instead.
const directChannelWait = 2 * directWait

// openDirect opens the shared channel's connection over the port socket.
// direct is false when it could not and the caller opens it as an exec;
// true, the connection or the error is the opening's.
func (s *Sandbox) openDirect() (hc *helperConn, direct bool, err error) {
	ps := s.ports
	if ps == nil || s.noDirect.Load() { // a handle with a port socket was made by New, which shared the helper
		return nil, false, nil
	}
	_, tok, wait, ok := ps.expect()
	if !ok {
		return nil, false, nil
	}
	hctx, cancel := context.WithTimeoutCause(context.Background(), handshakeTimeout, errDaemonSilent)
	defer cancel()
	st, err := s.eng.Exec(hctx, s.id, []string{path.Join(portsDir, docker.SharedHelper), proto.DirectServeMode, portsSocket, helperPath}, "")
	if err != nil {
		ps.forget(tok, wait)
		return nil, false, nil
	}
	diag := &headBuffer{max: 4096}
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(diag, st.Stderr()); close(ended) }()
	go func() { _, _ = io.Copy(io.Discard, st.Stdout()) }()
	var c *net.UnixConn
	if _, err := st.Write(tok[:]); err == nil {
		t := time.NewTimer(directChannelWait)
		select {
		case c = <-wait:
		case <-ended: // the copy gave up
		case <-t.C:
		}
		t.Stop()
	}
	if c == nil {
		c = ps.forget(tok, wait) // it may have come meanwhile
	}
	if c == nil {
		st.Close()
		s.noDirect.Store(true) // it would fail again (gVisor without --host-uds=open): no exec wasted
		return nil, false, nil
	}
	ps.forget(tok, wait)
	hc, err = s.greet(context.Background(), hctx, directStream{c, st}, diag)
	return hc, true, err
}

// directStream is the shared channel's connection over the port socket,
// with the exec that started its helper (its standard error).
type directStream struct {
	*net.UnixConn
	exec engine.Stream
}

func (d directStream) Stdout() io.Reader { return d.UnixConn }
func (d directStream) Stderr() io.Reader { return d.exec.Stderr() }

// Close ends the connection and the exec's stream.
func (d directStream) Close() error {
	err := d.UnixConn.Close()
	d.exec.Close()
	return err
}
