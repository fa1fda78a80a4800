package helper

import (
	"context"
	"encoding/json"
	"errors"
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
		t.serveMux(c, fr, fw) // pid1_mux.go
		return
	}
	if req.Proc == nil {
		return
	}
	var in []byte
	if req.TakesInput() {
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
