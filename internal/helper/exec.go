package helper

import (
	"context"
	"errors"
	"io"
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

// runExec runs req.Command with sh -c in a process group of its own,
// streaming output frames, and kills the whole tree on timeout or when ctx
// ends.
func runExec(ctx context.Context, req proto.Request, in io.Reader, send func(proto.Kind, []byte) error) *proto.Result {
	cmd := exec.Command(shell(), "-c", req.Command)
	cmd.Env = append(os.Environ(), req.Env...)
	cmd.Dir = req.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	outR, outW, err := os.Pipe()
	if err != nil {
		return failure(err)
	}
	defer outR.Close()
	cmd.Stdout, cmd.Stderr = outW, outW
	pipes := []*os.File{outR}
	kinds := []proto.Kind{proto.KindStdout}
	if !req.Combined {
		errR, errW, err := os.Pipe()
		if err != nil {
			outW.Close()
			return failure(err)
		}
		defer errR.Close()
		cmd.Stderr = errW
		pipes, kinds = append(pipes, errR), append(kinds, proto.KindStderr)
	}
	var inW *os.File
	if in != nil {
		inR, w, err := os.Pipe()
		if err != nil {
			return failure(err)
		}
		cmd.Stdin, inW = inR, w
	}
	ooms := oomKills()
	err = cmd.Start()
	closeChildEnds(cmd)
	if err != nil {
		if inW != nil {
			inW.Close()
		}
		return &proto.Result{Error: &proto.Error{Code: proto.CodeNotFound, Message: err.Error()}, ExitCode: 127}
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

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(time.Duration(req.Timeout) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	timedOut := false
	select {
	case <-waited:
	case <-timeout:
		timedOut = true
		killTree(cmd.Process.Pid)
		<-waited
	case <-ctx.Done():
		killTree(cmd.Process.Pid)
		<-waited
	}
	for _, p := range pipes {
		_ = p.SetReadDeadline(time.Now().Add(drainGrace))
	}
	readers.Wait()

	res := &proto.Result{ExitCode: exitCode(cmd.ProcessState)}
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

// closeChildEnds closes the parent's copies of the child's stdio files.
func closeChildEnds(cmd *exec.Cmd) {
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f, ok := f.(*os.File); ok {
			f.Close()
		}
	}
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
