package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
)

// A port socket is a unix socket the library listens on and shares with
// the sandbox's container (a read-only bind mount of its directory at
// portsDir), on an engine that runs on this machine: Dial's bytes then go
// over a connection the helper makes to it instead of the shared
// channel's stream, which the engine's exec path (the daemon and its shim
// copy every byte) bounds. The helper introduces each connection with the
// dial's token; the library acknowledges it (proto.DirectAck) only for a
// dial it is waiting for. Whatever fails, the dial goes on as a stream.
//
// The container cannot write into the directory (read-only), so it cannot
// plant a file or link there; the socket is the library's. Connections
// that do not bring a token the library waits for are closed: at most
// maxIntroductions wait to introduce themselves at once, each for at most
// directWait, so a container that floods the socket costs a bounded
// number of goroutines and descriptors.

// portsDir is where the sandbox sees the directory of the port socket.
const portsDir = proto.ShareDir

// portsSocket is the socket's path in the sandbox.
const portsSocket = proto.PortsSocket

// maxIntroductions bounds the connections reading their token at once.
const maxIntroductions = 16

// directWait bounds an introduction (the token, then the acknowledgement).
const directWait = 2 * time.Second

// portSocket is the host's side of a sandbox's port socket.
type portSocket struct {
	parent string // a private directory (0700) holding dir
	dir    string // the directory mounted at portsDir (0755)
	l      *net.UnixListener
	slots  chan struct{}

	mu      sync.Mutex
	waiting map[[proto.DirectTokenSize]byte]chan *net.UnixConn
	intro   map[*net.UnixConn]struct{} // introducing themselves
	closed  bool
	wg      sync.WaitGroup
}

// newPortSocket listens on a new socket in a new private directory.
func newPortSocket() (*portSocket, error) {
	parent, err := os.MkdirTemp("", "dockersandbox-")
	if err != nil {
		return nil, err
	}
	ps := &portSocket{parent: parent, dir: filepath.Join(parent, "s"), slots: make(chan struct{}, maxIntroductions),
		waiting: map[[proto.DirectTokenSize]byte]chan *net.UnixConn{}, intro: map[*net.UnixConn]struct{}{}}
	fail := func(err error) (*portSocket, error) {
		os.RemoveAll(parent)
		return nil, err
	}
	if err := os.Mkdir(ps.dir, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Chmod(ps.dir, 0o755); err != nil { // whatever the umask
		return fail(err)
	}
	sock := filepath.Join(ps.dir, filepath.Base(portsSocket))
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	// Any user of the sandbox may connect (the directory above is private
	// on the host).
	if err := os.Chmod(sock, 0o666); err != nil {
		l.Close()
		return fail(err)
	}
	ps.l = l
	ps.wg.Add(1)
	go ps.accept()
	return ps, nil
}

// mount is the bind mount that shares the socket's directory, read-only.
func (ps *portSocket) mount() mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: ps.dir, Target: portsDir, ReadOnly: true}
}

// accept takes connections until the listener closes.
func (ps *portSocket) accept() {
	defer ps.wg.Done()
	for {
		c, err := ps.l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors: later
			continue
		}
		select {
		case ps.slots <- struct{}{}:
			ps.mu.Lock()
			if ps.closed {
				ps.mu.Unlock()
				c.Close()
				return
			}
			ps.intro[c] = struct{}{}
			ps.mu.Unlock()
			ps.wg.Add(1)
			go func() {
				defer ps.wg.Done()
				defer func() { <-ps.slots }()
				ps.introduce(c)
			}()
		default:
			c.Close() // too many at once: not one of ours, or it falls back
		}
	}
}

// introduce reads c's token and hands c to the dial waiting for it.
func (ps *portSocket) introduce(c *net.UnixConn) {
	_ = c.SetDeadline(time.Now().Add(directWait))
	var tok [proto.DirectTokenSize]byte
	if _, err := io.ReadFull(c, tok[:]); err != nil {
		ps.mu.Lock()
		delete(ps.intro, c)
		ps.mu.Unlock()
		c.Close()
		return
	}
	// Once handed to the dial, c's deadlines are its user's: clear ours
	// first (clearing them after, a Read deadline set in between was lost
	// and the Read waited forever).
	_ = c.SetDeadline(time.Time{})
	ps.mu.Lock()
	delete(ps.intro, c)
	ch := ps.waiting[tok]
	delete(ps.waiting, tok)
	if ch != nil {
		ch <- c // buffered: never blocks
	}
	ps.mu.Unlock()
	if ch == nil {
		c.Close()
		return
	}
	// One byte into a connection nothing was written to does not block.
	// The dial closes c if the helper does not say it took it.
	_, _ = c.Write([]byte{proto.DirectAck})
	// testhook.AckDelay, set by tests only, is how long an introduction
	// pauses once it acknowledged its connection: whatever follows must
	// leave the connection alone.
	time.Sleep(time.Duration(testhook.AckDelay.Load()))
}

func init() {
	testhook.HasPortSocket = func(sb any) bool { return sb.(*Sandbox).ports != nil }
	testhook.ConnIsDirect = func(c net.Conn) bool {
		cc, ok := c.(*Conn)
		return ok && cc.dc != nil
	}
	testhook.ChannelKind = func(sb any) string {
		s := sb.(*Sandbox)
		s.chMu.Lock()
		defer s.chMu.Unlock()
		if s.ch == nil {
			return ""
		}
		switch s.ch.hc.conn.(type) {
		case firstStream:
			return "first"
		case directStream:
			return "socket"
		}
		return "exec"
	}
	testhook.LabelPortsDir = labelPortsDir
	testhook.MaxIntroductions = maxIntroductions
}

// expect registers a dial's token; the connection that brings it arrives
// on the channel. The dial calls forget when it no longer waits.
func (ps *portSocket) expect() (string, [proto.DirectTokenSize]byte, chan *net.UnixConn, bool) {
	var tok [proto.DirectTokenSize]byte
	_, _ = rand.Read(tok[:])
	ch := make(chan *net.UnixConn, 1)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return "", tok, nil, false
	}
	ps.waiting[tok] = ch
	return hex.EncodeToString(tok[:]), tok, ch, true
}

// expectFirst registers the first channel's token and shares it with the
// container (proto.FirstChannelFile, mode 0644); end takes the connection
// PID 1 introduced with it, if any, and removes the file.
func (ps *portSocket) expectFirst() (end func() *net.UnixConn) {
	tokHex, tok, ch, ok := ps.expect()
	if !ok {
		return func() *net.UnixConn { return nil }
	}
	name := filepath.Join(ps.dir, filepath.Base(proto.FirstChannelFile))
	if err := docker.WriteShared(name, []byte(tokHex), 0o644); err != nil {
		ps.forget(tok, ch)
		return func() *net.UnixConn { return nil }
	}
	return func() *net.UnixConn {
		os.Remove(name)
		return ps.forget(tok, ch)
	}
}

// forget ends a dial's wait for tok and returns the connection that
// brought it, if one did.
func (ps *portSocket) forget(tok [proto.DirectTokenSize]byte, ch chan *net.UnixConn) *net.UnixConn {
	ps.mu.Lock()
	delete(ps.waiting, tok)
	ps.mu.Unlock()
	select {
	case c := <-ch:
		return c
	default:
		return nil
	}
}

// close stops listening, ends the introductions in progress and removes
// the directory. Connections handed to dials are theirs.
func (ps *portSocket) close() { ps.stop(false) }

// detach stops listening and ends the introductions in progress, and
// keeps the directory: the container, which another program may restart,
// mounts it.
func (ps *portSocket) detach() { ps.stop(true) }

func (ps *portSocket) stop(keepDir bool) {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return
	}
	ps.closed = true
	for c := range ps.intro {
		c.Close()
	}
	ps.mu.Unlock()
	ps.l.Close() // removes the socket
	ps.wg.Wait()
	if !keepDir {
		os.RemoveAll(ps.parent)
	}
}

// labelPortsDir holds the host directory of a sandbox's port socket, so
// that a program that removes the sandbox after another made it (Attach,
// Prune) removes the directory too.
const labelPortsDir = labelPrefix + "ports-dir"

// portSocket returns a new port socket for a sandbox on d, or nil when
// Dial cannot use one (see WithDirectPorts) or it could not be made.
func (o *options) portSocket(d *docker.Engine, host *container.HostConfig) *portSocket {
	if !o.directPorts || !o.autoRemove || runtime.GOOS != "linux" || !d.Local() || docker.MountsAt(host, portsDir) {
		return nil
	}
	ps, err := newPortSocket()
	if err != nil {
		return nil
	}
	return ps
}

// closePorts, after Close removed or stopped the container, closes the
// sandbox's port socket and removes its directory (or a detached
// sandbox's, from its label) when the container is gone.
func (s *Sandbox) closePorts() {
	if s.ports != nil {
		if s.opts.autoRemove {
			s.ports.close()
		} else {
			s.ports.detach()
		}
		return
	}
	if s.opts.autoRemove {
		removePortsDir(s.portsDir)
	}
}

// detachPorts stops the port socket of a sandbox handed over by Detach.
func (s *Sandbox) detachPorts() {
	if s.ports != nil {
		s.ports.detach()
	}
}

// removePortsDir removes dir, a port socket's directory from a label,
// if it is one: a directory of the temporary directory named as
// newPortSocket names them, holding only the socket's directory.
func removePortsDir(dir string) {
	if dir == "" || filepath.Clean(dir) != dir || filepath.Dir(dir) != filepath.Clean(os.TempDir()) ||
		!strings.HasPrefix(filepath.Base(dir), "dockersandbox-") {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "s" {
		return
	}
	os.RemoveAll(dir)
}

// portDirMinAge is how old a port socket must be before the sweep looks at
// it: between bind and listen a new socket refuses connections too.
const portDirMinAge = time.Minute

// sweepPortDirs removes the port socket directories (see newPortSocket) in
// the temporary directory whose socket nobody listens on any more and that
// no container in list names: the program that made them died without
// Close (SIGKILL, a crash inside New) and its container went another way
// (its idle timeout or lifetime, docker rm, a sweep). A directory without a
// socket (a detached sandbox's, whose handle from Attach removes it) is
// left alone, as is one another user owns. New calls it, after it swept
// the abandoned containers; list is the daemon's sandboxes it listed
// before, less those it removed.
func sweepPortDirs(list []engine.Info) {
	tmp := filepath.Clean(os.TempDir())
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, c := range list {
		if d := c.Labels[labelPortsDir]; d != "" {
			named[d] = true
		}
	}
	for _, e := range entries {
		dir := filepath.Join(tmp, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "dockersandbox-") || named[dir] {
			continue
		}
		if deadPortSocket(filepath.Join(dir, "s", filepath.Base(portsSocket))) {
			removePortsDir(dir)
		}
	}
}

// deadPortSocket reports whether sock is a unix socket older than
// portDirMinAge that refuses connections: its listener is gone.
func deadPortSocket(sock string) bool {
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || time.Since(fi.ModTime()) < portDirMinAge {
		return false
	}
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err == nil {
		c.Close() // alive: its library reads no token and closes it
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
