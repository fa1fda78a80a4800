package helper

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// dialTimeout bounds a connect inside the sandbox when the library's
// context does not end it first.
const dialTimeout = 2 * time.Minute

// dial connects to req.Address inside the sandbox's network namespace and
// carries the connection as stream id until both sides closed it, the
// library cancels it, or it fails (a Result error: the library's side
// reads it as a reset).
func (t *streamTable) dial(ctx context.Context, id uint32, req proto.Request, send func(proto.Kind, []byte) error) *proto.Result {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, req.Network, req.Address)
	if err != nil {
		return &proto.Result{Error: dialError(err)}
	}
	return t.carry(ctx, id, req, conn, send)
}

// carry carries conn as stream id (for req, a dial's or an accept's) until
// both sides closed it, the library cancels it, or it fails; it closes
// conn.
func (t *streamTable) carry(ctx context.Context, id uint32, req proto.Request, conn net.Conn, send func(proto.Kind, []byte) error) *proto.Result {
	defer conn.Close()
	st, sctx := t.open(ctx, id, req.Op, send)
	defer t.remove(id)
	var dc *net.UnixConn
	if req.Direct != "" {
		dc = directConnect(sctx, req.Direct, req.Token) // dial_direct.go
	}
	open, _ := json.Marshal(proto.StreamOpen{Local: addrString(conn.LocalAddr()), Remote: addrString(conn.RemoteAddr()), Direct: dc != nil})
	if err := send(proto.KindOpen, open); err != nil {
		if dc != nil {
			dc.Close()
		}
		return &proto.Result{Error: proto.ErrorOf(err)}
	}
	if dc != nil {
		return dialResult(ctx, spliceDirect(sctx, conn, dc, func() error { return st.send(proto.KindEOF, nil) }))
	}
	up, down := make(chan error, 1), make(chan error, 1)
	go func() { up <- st.pumpUp(sctx, conn) }()
	go func() { down <- st.pumpDown(sctx, conn) }()
	// Closing the connection ends both pumps; joinPumps waits for them, so
	// that no data frame follows the Result.
	return dialResult(ctx, joinPumps(sctx, up, down, func() {
		conn.Close()
		st.cancel(context.Canceled)
	}))
}

// joinPumps waits until both pumps (each sending its end on its channel)
// ended, one failed, or ctx ended; then it calls stop, which must end the
// pumps, waits for them, and returns the failure (nil: both ended well).
func joinPumps(ctx context.Context, up, down <-chan error, stop func()) error {
	var failure error
	upDone, downDone := false, false
	for !(upDone && downDone) && failure == nil {
		select {
		case failure = <-up:
			upDone = true
		case failure = <-down:
			downDone = true
		case <-ctx.Done():
			failure = context.Cause(ctx)
		}
	}
	stop()
	if !upDone {
		<-up
	}
	if !downDone {
		<-down
	}
	return failure
}

// dialResult is the Result of a dial that ended with failure (nil: both
// sides closed it).
func dialResult(ctx context.Context, failure error) *proto.Result {
	switch {
	case failure == nil, errors.Is(failure, context.Canceled) && ctx.Err() != nil:
		return &proto.Result{}
	case errors.Is(failure, errLibraryLied):
		return &proto.Result{Error: &proto.Error{Code: proto.CodeBadRequest, Message: failure.Error()}}
	}
	return &proto.Result{Error: &proto.Error{Code: proto.CodeReset, Message: failure.Error()}}
}

// pumpUp sends what the connection reads, within credit, then KindEOF.
func (st *hstream) pumpUp(ctx context.Context, conn net.Conn) error {
	buf := make([]byte, proto.StreamChunk)
	for {
		n, err := st.take(ctx, 1, len(buf))
		if err != nil {
			return err
		}
		m, rerr := conn.Read(buf[:n])
		st.giveBack(n - m)
		if m > 0 {
			if err := st.send(proto.KindData, buf[:m]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return st.send(proto.KindEOF, nil)
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return rerr
		}
	}
}

// pumpDown writes the library's data on the connection, granting credit
// as it goes, and half-closes it after the library's KindEOF.
func (st *hstream) pumpDown(ctx context.Context, conn net.Conn) error {
	for {
		p, err := st.next(ctx)
		if errors.Is(err, io.EOF) {
			if cw, ok := conn.(interface{ CloseWrite() error }); ok {
				return cw.CloseWrite()
			}
			return nil
		}
		if err != nil {
			return err
		}
		_, err = conn.Write(p)
		n := len(p)
		proto.ReleaseData(p) // written: the next frame may take it
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		if err := st.consumed(n); err != nil {
			return err
		}
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// dialError classifies a failed connect.
func dialError(err error) *proto.Error {
	code := proto.CodeDial
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		code = proto.CodeRefused
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		code = proto.CodeTimedOut
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		code = proto.CodeUnreachable
	case errors.As(err, &dnsErr):
		code = proto.CodeNoHost
	case errors.Is(err, syscall.ENOENT):
		code = proto.CodeNotFound
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		code = proto.CodePermission
	}
	msg := err.Error()
	if len(msg) > maxErrorMessage {
		msg = msg[:maxErrorMessage]
	}
	return &proto.Error{Code: code, Message: msg}
}
