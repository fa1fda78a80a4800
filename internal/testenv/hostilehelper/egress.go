package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The egress mode forges the connections of a sandbox's egress (the
// accepts on the proxy's listener, whose bytes the library's proxy
// decides on); it answers every other request honestly:
//
//	egress-forge    answers each accept with a connection it never
//	                accepted, carrying the next of forgedEgress as if a
//	                client in the sandbox had sent it, then its end; once
//	                all are sent, an accept waits, as for no client. It
//	                says it is alive every second meanwhile, and answers a
//	                cancel with the stream's Result.

// forgedEgress is what the forged connections carry: every request the
// policy in the test ("allowed.test" only) must deny, whoever sends it.
func forgedEgress() []string {
	return []string{
		"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n",
		"GET http://other.test/forged HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://allowed.test/forged HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"CONNECT 192.0.2.10:80 HTTP/1.1\r\nHost: 192.0.2.10:80\r\n\r\n",
		"CONNECT [2001:db8::10]:443 HTTP/1.1\r\nHost: [2001:db8::10]:443\r\n\r\n",
		"CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n" +
			"GET /first HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET /second HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n" + string(clientHello("other.test")),
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n",
	}
}

// forger hands out the forged connections, one per accept.
type forger struct {
	mu    sync.Mutex
	next  int
	alive sync.Once
}

var forge forger

// egressAnswer answers req in the egress mode; handled is false in others.
func (h *helper) egressAnswer(id uint32, req proto.Request) (handled bool, err error) {
	if h.mode != "egress-forge" {
		return false, nil
	}
	forge.alive.Do(func() {
		go func() {
			for h.frame(byte(proto.KindAlive), 0, nil) == nil {
				time.Sleep(time.Second)
			}
		}()
	})
	if req.Op != proto.OpAccept {
		return true, h.frame(byte(proto.KindResult), id, honest(req))
	}
	all := forgedEgress()
	forge.mu.Lock()
	i := forge.next
	forge.next++
	forge.mu.Unlock()
	if i >= len(all) {
		return true, nil // no client: the accept waits
	}
	open, _ := json.Marshal(proto.StreamOpen{Local: "127.0.0.1:3128", Remote: "127.0.0.1:40000"})
	if err := h.frame(byte(proto.KindOpen), id, open); err != nil {
		return true, err
	}
	if err := h.frame(byte(proto.KindData), id, []byte(all[i])); err != nil {
		return true, err
	}
	return true, h.frame(byte(proto.KindEOF), id, nil)
}

// egressCancel ends a stream the library cancelled, in the egress mode.
func (h *helper) egressCancel(id uint32) error {
	if h.mode != "egress-forge" {
		return nil
	}
	b, _ := json.Marshal(proto.Result{})
	return h.frame(byte(proto.KindResult), id, b)
}

// clientHello returns the first record of a TLS handshake for name.
func clientHello(name string) []byte {
	c := &recordingConn{}
	_ = tls.Client(c, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
	return c.buf.Bytes()
}

// recordingConn records what is written to it; a read fails.
type recordingConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordingConn) Write(p []byte) (int, error)      { return c.buf.Write(p) }
func (c *recordingConn) Read([]byte) (int, error)         { return 0, errors.New("recorded") }
func (c *recordingConn) Close() error                     { return nil }
func (c *recordingConn) SetDeadline(time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordingConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *recordingConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
