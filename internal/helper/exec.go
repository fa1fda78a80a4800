package helper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// drainGrace is how long output is still read after the command exits, for
// what its background children wrote just before. A background process that
// keeps the output open does not hold the command's result longer than this.
const drainGrace = 50 * time.Millisecond

// runExec runs req.Command with sh -c under a reaper of its own (see RunReaper),
// which leads a new process group, streaming output frames, and kills the
// whole tree on timeout, when ctx ends, or when the command killed its
// reaper.
func runExec(ctx context.Context, req proto.Request, in io.Reader, send func(proto.Kind, []byte) error) *proto.Result {
	if req.TTY != nil {
		return runExecTTY(ctx, req, in, send)
	}
	if req.Dir != "" {
		if e := checkExecDir(req.Dir); e != nil {
			return &proto.Result{Error: e, ExitCode: 127}
		}
	}
	sh, err := exec.LookPath(shell())
	if err != nil {
		return &proto.Result{Error: &proto.Error{Code: proto.CodeNotFound, Message: err.Error()}, ExitCode: 127}
	}
	var capt *capture
	if req.Capture != nil {
		if !req.Combined {
			return &proto.Result{Error: &proto.Error{Code: proto.CodeBadRequest, Message: "capture: only of combined output"}, ExitCode: -1}
		}
		var e *proto.Error
		if capt, e = openCapture(req.Capture); e != nil {
			return &proto.Result{Error: e, ExitCode: -1}
		}
		inner := send
		send = func(k proto.Kind, b []byte) error {
			capt.write(b)
			return inner(k, b)
		}
		defer capt.close() // on the paths that return early (close is idempotent)
	}
	var stdio [3]*os.File
	defer closeAll(&stdio) // the child's ends: the reaper has its copies
	outR, outW, err := os.Pipe()
	if err != nil {
		return failure(err)
	}
	defer outR.Close()
	stdio[1], stdio[2] = outW, outW
	pipes := []*os.File{outR}
	kinds := []proto.Kind{proto.KindStdout}
	if !req.Combined {
		errR, errW, err := os.Pipe()
		if err != nil {
			return failure(err)
		}
		defer errR.Close()
		stdio[2] = errW
		pipes, kinds = append(pipes, errR), append(kinds, proto.KindStderr)
	}
	var inW *os.File
	if in != nil {
		stdio[0], inW, err = os.Pipe()
	} else {
		stdio[0], err = os.Open(os.DevNull)
	}
	if err != nil {
		return failure(err)
	}
	l, err := shellLaunch(sh, req.Command, mergeEnv(os.Environ(), req.Env), req.Dir, false)
	if err != nil {
		return failure(err)
	}
	ooms := oomKills()
	r, err := runReaped(ctx, l, stdio)
	closeAll(&stdio)
	l.closeScript()
	if err != nil {
		if inW != nil {
			inW.Close()
		}
		return &proto.Result{Error: startError(req.Dir, err), ExitCode: 127}
	}
	if inW != nil {
		go func() {
			_, _ = io.Copy(inW, in)
			inW.Close()
		}()
	}

	var readers sync.WaitGroup
	for i, p := range pipes {
		readers.Add(1)
		go func() {
			defer readers.Done()
			pump(p, kinds[i], send)
		}()
	}

	outcomes := make(chan outcome, 1)
	go func() { outcomes <- r.wait() }()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(time.Duration(req.Timeout) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	timedOut, killed := false, false
	var o outcome
	select {
	case o = <-outcomes:
	case <-timeout:
		timedOut, killed = true, true
	case <-ctx.Done():
		killed = true
	}
	if killed {
		killTree(r.cmd.Process.Pid)
		o = <-outcomes
	}
	status := o.status
	if o.err != nil {
		// The reaper died without the shell's status: killed above, or by
		// the command (it survives every other signal), or it crashed.
		// What the command started must not outlive it.
		killTree(r.cmd.Process.Pid)
	}
	if killed || o.err != nil {
		_ = r.cmd.Wait()
		r.conn.Close()
		if o.err != nil {
			status = exitCode(r.cmd.ProcessState)
		}
	} else if o.clean {
		release(r)
	} else {
		r.close() // it exits by itself, leaving the command's background
	}
	for _, p := range pipes {
		_ = p.SetReadDeadline(time.Now().Add(drainGrace))
	}
	readers.Wait()

	res := &proto.Result{ExitCode: status}
	if capt != nil {
		res.Captured = capt.close()
	}
	if timedOut {
		res.ExitCode, res.TimedOut = proto.TimeoutExitCode, true
	} else if res.ExitCode == 128+int(syscall.SIGKILL) && ooms >= 0 && oomKills() > ooms {
		res.OOMKilled = true
	}
	return res
}

// pump sends what p yields as frames until EOF, a deadline, or a failed send.
// At the deadline it still sends what the pipe holds: a loaded machine may
// not have scheduled the reader before the deadline passed, and the output
// the command wrote before it exited must not be lost.
func pump(p *os.File, kind proto.Kind, send func(proto.Kind, []byte) error) {
	buf := make([]byte, proto.ChunkSize)
	for {
		n, err := p.Read(buf)
		if n > 0 {
			if send(kind, buf[:n]) != nil {
				return
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			drainBuffered(p, buf, kind, send)
		}
		if err != nil {
			return
		}
	}
}

// maxDrain bounds drainBuffered, against a background process that keeps
// writing.
const maxDrain = 4 << 20

// drainBuffered sends what the pipe p holds now, without waiting for more.
// The read end of an os.Pipe is non-blocking, so raw reads return EAGAIN
// when it is empty (where p.Read would report the passed deadline).
func drainBuffered(p *os.File, buf []byte, kind proto.Kind, send func(proto.Kind, []byte) error) {
	rc, err := p.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		for total := 0; total < maxDrain; {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil || send(kind, buf[:n]) != nil {
				return
			}
			total += n
		}
	})
}

// closeAll closes the files of fs that are open, once.
func closeAll(fs *[3]*os.File) {
	for i, f := range fs {
		if f != nil && (i == 0 || f != fs[i-1]) {
			f.Close()
		}
	}
	*fs = [3]*os.File{}
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func shell() string {
	if _, err := os.Stat("/bin/sh"); err == nil {
		return "/bin/sh"
	}
	return "sh"
}

func failure(err error) *proto.Result {
	return &proto.Result{Error: proto.ErrorOf(err), ExitCode: -1}
}

// checkExecDir checks that dir, a command's working directory, exists and
// is a directory, for an error that names it (a failed chdir in the new
// process would only say that the program was not found).
func checkExecDir(dir string) *proto.Error {
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return execDirError(dir, err)
	}
	return nil
}

// execDirError is the typed error for an unusable working directory.
func execDirError(dir string, err error) *proto.Error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	e := proto.ErrorOf(err)
	e.Message = fmt.Sprintf("exec directory %s: %v", dir, err)
	return e
}

// startError is the typed error for a command that did not start. With a
// working directory that exists, the likely cause is that the user may not
// enter it. E2BIG is the environment's size (a long command goes in a file,
// see shellLaunch), not a missing file.
func startError(dir string, err error) *proto.Error {
	if dir != "" && (errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist)) {
		return execDirError(dir, err)
	}
	if errors.Is(err, syscall.E2BIG) {
		return badRequest("the command's environment is larger than the kernel allows a new program: %v", err)
	}
	return &proto.Error{Code: proto.CodeNotFound, Message: err.Error()}
}
