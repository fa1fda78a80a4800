package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// Errors of the Docker engine that the sandbox package exports as its own.
var (
	// ErrImageNotFound: the image is not on the daemon and cannot be pulled.
	ErrImageNotFound = errors.New("sandbox: image not found")
	// ErrDaemonUnreachable: the daemon cannot be reached.
	ErrDaemonUnreachable = errors.New("sandbox: docker daemon unreachable")
)

// kindErr is a daemon's error, worded as the daemon did, that matches an
// engine sentinel (or fs.ErrNotExist, …) for errors.Is.
type kindErr struct {
	err  error
	kind error
	keep bool // the daemon's error is unwrapped too
}

func (e *kindErr) Error() string { return e.err.Error() }

func (e *kindErr) Unwrap() []error {
	if e.keep {
		return []error{e.kind, e.err}
	}
	return []error{e.kind}
}

// unreachable marks a failure to reach the daemon (no socket, refused,
// reset, a broken TLS handshake) as engine.ErrUnreachable; the daemon's
// error is not unwrapped: a missing socket's ENOENT must not pass for a
// missing file (fs.ErrNotExist). Other errors pass through.
func unreachable(err error) error {
	if err == nil || errors.Is(err, engine.ErrUnreachable) || !client.IsErrConnectionFailed(err) {
		return err
	}
	return &kindErr{err: err, kind: engine.ErrUnreachable}
}

// classify marks a daemon's answer about a container with the engine
// sentinel it means: unreachable, paused, no such container, not running
// (a conflict; Podman's "container state improper"). A context's end and
// other errors pass through.
func Classify(err error) error {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrNotRunning),
		errors.Is(err, engine.ErrPaused), errors.Is(err, engine.ErrUnreachable):
		return err
	case client.IsErrConnectionFailed(err):
		return unreachable(err)
	case strings.Contains(err.Error(), "is paused"): // an exec on a paused container
		return &kindErr{err: err, kind: engine.ErrPaused, keep: true}
	case IsNotFound(err):
		return &kindErr{err: err, kind: engine.ErrNotFound, keep: true}
	case cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "container state improper"):
		return &kindErr{err: err, kind: engine.ErrNotRunning, keep: true}
	}
	return err
}

// archiveErr classifies an error of the archive API: a missing container
// (engine.ErrNotFound) is told from a missing path (fs.ErrNotExist); a
// directory where a file goes is engine.ErrIsDir, a full disk ENOSPC, a
// refusal fs.ErrPermission.
func archiveErr(err error) error {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case client.IsErrConnectionFailed(err):
		return unreachable(err)
	case strings.Contains(strings.ToLower(err.Error()), "no such container"):
		return &kindErr{err: err, kind: engine.ErrNotFound, keep: true}
	case cerrdefs.IsNotFound(err):
		return &kindErr{err: err, kind: fs.ErrNotExist}
	case strings.Contains(err.Error(), "cannot overwrite directory"):
		return &kindErr{err: err, kind: engine.ErrIsDir}
	case strings.Contains(err.Error(), "no space left on device"): // the daemon's extraction failed
		return &kindErr{err: err, kind: syscall.ENOSPC}
	case cerrdefs.IsPermissionDenied(err):
		return &kindErr{err: err, kind: fs.ErrPermission}
	}
	return Classify(err)
}

// dockerStream is an attached exec: stdin on the hijacked connection,
// stdout and stderr split from Docker's multiplexed stream.
type dockerStream struct {
	conn           client.HijackedResponse
	stdout, stderr *io.PipeReader
}

func newDockerStream(h client.HijackedResponse) *dockerStream {
	or, ow := io.Pipe()
	er, ew := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(ow, ew, h.Reader)
		ow.CloseWithError(err)
		ew.CloseWithError(err)
	}()
	return &dockerStream{conn: h, stdout: or, stderr: er}
}

func (s *dockerStream) Write(p []byte) (int, error) { return s.conn.Conn.Write(p) }
func (s *dockerStream) CloseWrite() error           { return s.conn.CloseWrite() }
func (s *dockerStream) Stdout() io.Reader           { return s.stdout }
func (s *dockerStream) Stderr() io.Reader           { return s.stderr }

// Close ends the connection, and the demultiplexer even when it waits for
// a reader that stopped reading.
func (s *dockerStream) Close() error {
	s.conn.Close()
	s.stdout.Close()
	s.stderr.Close()
	return nil
}

// DaemonErr turns a failure to reach the engine (engine.ErrUnreachable,
// or a Docker client's: no socket, refused, reset, a broken TLS
// handshake) into ErrDaemonUnreachable, quoting the cause with %v: a
// missing socket's ENOENT must not pass for a missing file
// (fs.ErrNotExist). Other errors pass through.
func DaemonErr(err error) error {
	if err == nil || errors.Is(err, ErrDaemonUnreachable) || !errors.Is(err, engine.ErrUnreachable) && !client.IsErrConnectionFailed(err) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
}
