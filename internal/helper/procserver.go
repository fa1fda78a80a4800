package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The process table is served by PID 1 on a unix socket in a directory
// next to the helper that only the sandbox's user (PID 1's) may enter; the
// helpers serving the library forward process requests there.
const (
	procRunDir  = "run"
	procSockets = "procs.sock"
)

// procSocketPath is where PID 1 serves its process table.
func procSocketPath() string {
	return filepath.Join(filepath.Dir(os.Args[0]), procRunDir, procSockets)
}

// procRequestWait bounds how long PID 1 waits for a connection's request.
const procRequestWait = 5 * time.Second

// maxProcInput bounds the input of one write request.
const maxProcInput = proto.MaxProcRead

// serveProcs makes PID 1 own a process table and serve it; it returns
// at once. Without a usable directory, process requests fail with
// CodeProcUnavailable.
func serveProcs() {
	path := procSocketPath()
	dir := filepath.Dir(path)
	_ = os.Mkdir(dir, 0o700)
	fi, err := os.Lstat(dir)
	if err != nil {
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return // not ours alone: someone else could answer in our name
	}
	_ = os.Remove(path) // left by a previous start of the container
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return
	}
	l.SetUnlinkOnClose(false)
	procTab = newProcTable()
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(10 * time.Millisecond) // out of descriptors: let some close
				continue
			}
			go procTab.serveConn(c)
		}
	}()
}

// peerAllowed reports whether the peer of c runs as PID 1's user or root.
func peerAllowed(c *net.UnixConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return cred.Uid == 0 || int(cred.Uid) == os.Getuid()
}

// serveConn answers the one request of a connection: a Request frame, for
// a write one Input frame; output frames and the Result come back. The
// connection's end cancels the request.
func (t *procTable) serveConn(c *net.UnixConn) {
	defer c.Close()
	if !peerAllowed(c) {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(procRequestWait))
	fr := proto.NewReader(c)
	fw := proto.NewWriter(c)
	f, err := fr.ReadFrameLimited(func(k proto.Kind, _ uint32) int {
		if k == proto.KindRequest || k == proto.KindInput {
			return proto.MaxPayload
		}
		return 0
	})
	if err != nil || f.Kind != proto.KindRequest {
		return
	}
	var req proto.Request
	if err := json.Unmarshal(f.Payload, &req); err != nil {
		return
	}
	if req.Op == procMuxOp {
		_ = c.SetReadDeadline(time.Time{})
		t.serveMux(c, fr, fw) // procmux.go
		return
	}
	if req.Proc == nil {
		return
	}
	var in []byte
	if req.Op == proto.OpProcWrite {
		f, err := fr.ReadFrameLimited(func(proto.Kind, uint32) int { return maxProcInput })
		if err != nil || f.Kind != proto.KindInput {
			return
		}
		in = f.Payload
	}
	_ = c.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the client closes the connection to cancel
		var b [1]byte
		_, _ = c.Read(b[:])
		cancel()
	}()
	send := func(k proto.Kind, p []byte) error { return fw.WriteFrame(k, 1, p) }
	res, then := t.handle(ctx, req, in, send)
	_ = c.SetWriteDeadline(time.Now().Add(procRequestWait))
	_ = fw.WriteFrame(proto.KindResult, 1, encodeResult(req.Op, res))
	if then != nil {
		then()
	}
}

// forwardProc sends a process request to PID 1 and relays its answer: the
// part of a serving helper. in is a write's input.
func forwardProc(ctx context.Context, req proto.Request, in io.Reader, send func(proto.Kind, []byte) error) *proto.Result {
	var data []byte
	if req.Op == proto.OpProcWrite {
		var err error
		if data, err = io.ReadAll(io.LimitReader(in, maxProcInput+1)); err != nil {
			return failure(err)
		}
		if len(data) > maxProcInput {
			return procErr(proto.CodeBadRequest, fmt.Sprintf("a write of more than %d bytes", maxProcInput))
		}
	}
	mc, err := procConn.get(ctx) // one multiplexed connection (procmux.go)
	if err == nil && mc != nil {
		body, err := json.Marshal(req)
		if err != nil {
			return failure(err)
		}
		if res := mc.do(ctx, req, body, data, send); res != nil {
			return res
		}
	}
	c, err := dialProcs(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return failure(ctx.Err())
		}
		return procErr(proto.CodeProcUnavailable, "the sandbox's process table is unavailable: "+err.Error())
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	body, err := json.Marshal(req)
	if err != nil {
		return failure(err)
	}
	fw := proto.NewWriter(c)
	if err := fw.WriteFrame(proto.KindRequest, 1, body); err != nil {
		return forwardErr(ctx, err)
	}
	if req.Op == proto.OpProcWrite {
		if err := fw.WriteFrame(proto.KindInput, 1, data); err != nil {
			return forwardErr(ctx, err)
		}
	}
	fr := proto.NewReader(c)
	for {
		f, err := fr.ReadFrameLimited(func(k proto.Kind, _ uint32) int { return proto.MaxFrom(k, req.Op) })
		if err != nil {
			return forwardErr(ctx, err)
		}
		switch f.Kind {
		case proto.KindStdout:
			if err := send(f.Kind, f.Payload); err != nil {
				return failure(err)
			}
		case proto.KindResult:
			var res proto.Result
			if err := json.Unmarshal(f.Payload, &res); err != nil {
				return failure(err)
			}
			return &res
		default:
			return failure(fmt.Errorf("unexpected frame %q from the process table", f.Kind))
		}
	}
}

func forwardErr(ctx context.Context, err error) *proto.Result {
	if ctx.Err() != nil {
		return failure(ctx.Err())
	}
	return failure(fmt.Errorf("the process table: %w", err))
}

// helperStarted is when this helper process started.
var helperStarted = time.Now()

// procSocketWait is how long after this helper started a dial of PID 1's
// socket is retried while the socket is missing or refuses: PID 1 and the
// library's first helper start together, and a sandbox's first process
// request can come before PID 1 listens (CI saw ENOENT there).
const procSocketWait = 3 * time.Second

// dialProcs dials PID 1's process table, retrying a missing or refusing
// socket during this helper's first procSocketWait, within ctx.
func dialProcs(ctx context.Context) (*net.UnixConn, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", procSocketPath())
		if err == nil {
			return c.(*net.UnixConn), nil
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) || time.Since(helperStarted) > procSocketWait {
			return nil, err
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}
