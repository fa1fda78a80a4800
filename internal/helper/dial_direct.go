package helper

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"path"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Direct connections: when the library shares a unix socket with the
// sandbox (a read-only bind mount, on an engine on its own machine), a
// dial's bytes go over a connection to that socket instead of the shared
// channel's stream, which the engine's exec path bounds: the helper
// connects, writes the request's token, and waits for the library's
// proto.DirectAck. Anything else (no socket, no answer, a refusal) and
// the dial goes on as a stream.

// directWait bounds the connect, the token and the acknowledgement.
const directWait = 2 * time.Second

// validateDirect checks a dial's Direct and Token.
func validateDirect(req *proto.Request) *proto.Error {
	if req.Direct == "" && req.Token == "" {
		return nil
	}
	if !path.IsAbs(req.Direct) || len(req.Direct) > 100 {
		return badRequest("dial: unusable direct socket %q", clip(req.Direct))
	}
	if b, err := hex.DecodeString(req.Token); err != nil || len(b) != proto.DirectTokenSize {
		return badRequest("dial: a direct token must be %d bytes in hex", proto.DirectTokenSize)
	}
	return nil
}

// directConnect connects to the library's socket at p and introduces the
// connection with token; nil when the library did not take it.
func directConnect(ctx context.Context, p, token string) *net.UnixConn {
	tok, err := hex.DecodeString(token)
	if err != nil || len(tok) != proto.DirectTokenSize {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, directWait)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", p)
	if err != nil {
		return nil
	}
	uc := c.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(directWait))
	ack := []byte{0}
	if _, err := uc.Write(tok); err != nil {
		uc.Close()
		return nil
	}
	if _, err := io.ReadFull(uc, ack); err != nil || ack[0] != proto.DirectAck {
		uc.Close()
		return nil
	}
	_ = uc.SetDeadline(time.Time{})
	return uc
}

// spliceDirect copies between the connection in the sandbox and the
// library's, each way until EOF (then half-closing the other side), until
// both ended, one failed, or ctx ended; it returns the failure (the
// result's reset: when the library closed its side, it no longer reads
// the result). A clean end of the sandbox's side is said first with eof
// (the stream's KindEOF), so that the library, reading EOF on dc, knows
// it at once from a reset, which the Result says.
func spliceDirect(ctx context.Context, conn net.Conn, dc *net.UnixConn, eof func() error) error {
	up, down := make(chan error, 1), make(chan error, 1)
	go func() { // sandbox → library
		_, err := io.Copy(dc, conn)
		if err == nil {
			err = eof()
		}
		if err == nil {
			err = dc.CloseWrite()
		}
		up <- err
	}()
	go func() { // library → sandbox
		_, err := io.Copy(conn, dc)
		if err == nil {
			if cw, ok := conn.(interface{ CloseWrite() error }); ok {
				err = cw.CloseWrite()
			}
		}
		down <- err
	}()
	return joinPumps(ctx, up, down, func() {
		conn.Close()
		dc.Close()
	})
}
