package helper

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// runExecTTY is runExec on a pseudo-terminal of size req.TTY: the command's
// stdin, stdout and stderr are the terminal, which is its controlling
// terminal (its shell leads a new session under the reaper, so killTree
// still finds every process), input frames are typed on it and what it
// shows comes back as stdout frames. The size changes with KindResize
// frames (see ttyControl).
func runExecTTY(ctx context.Context, req proto.Request, in io.Reader, send func(proto.Kind, []byte) error) *proto.Result {
	if req.Dir != "" {
		if e := checkExecDir(req.Dir); e != nil {
			return &proto.Result{Error: e, ExitCode: 127}
		}
	}
	sh, err := exec.LookPath(shell())
	if err != nil {
		return &proto.Result{Error: &proto.Error{Code: proto.CodeNotFound, Message: err.Error()}, ExitCode: 127}
	}
	master, slave, err := OpenPTY()
	if err != nil {
		e := proto.ErrorOf(err)
		e.Message = err.Error()
		return &proto.Result{Error: e, ExitCode: 127}
	}
	defer master.Close()
	ctl := ttyOf(ctx)
	_ = SetWinsize(master, req.TTY.Rows, req.TTY.Cols)
	ctl.attach(master)
	defer ctl.detach()

	stdio := [3]*os.File{slave, slave, slave}
	ooms := oomKills()
	l, err := shellLaunch(sh, req.Command, mergeEnv(append([]string{"TERM=xterm"}, os.Environ()...), req.Env), req.Dir, true)
	if err != nil {
		slave.Close()
		return failure(err)
	}
	r, err := runReaped(ctx, l, stdio)
	slave.Close() // the reaper's command has its own: the master reads EIO once they are all closed
	l.closeScript()
	if err != nil {
		return &proto.Result{Error: startError(req.Dir, err), ExitCode: 127}
	}
	if in != nil {
		go func() { _, _ = io.Copy(master, in) }() // ends when the request's input closes, or master does
	}
	output := make(chan struct{})
	go func() {
		defer close(output)
		pump(master, proto.KindStdout, send)
	}()

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
		r.close()
	}
	_ = master.SetReadDeadline(time.Now().Add(drainGrace))
	<-output

	res := &proto.Result{ExitCode: status}
	if timedOut {
		res.ExitCode, res.TimedOut = proto.TimeoutExitCode, true
	} else if res.ExitCode == 128+int(syscall.SIGKILL) && ooms >= 0 && oomKills() > ooms {
		res.OOMKilled = true
	}
	return res
}

// ttyControl takes a running request's resizes: it holds the size asked
// before the terminal exists, and applies later ones to it at once.
type ttyControl struct {
	mu      sync.Mutex
	master  *os.File
	pending *proto.Winsize
	done    bool
}

// resize sets the terminal's size, or keeps it for attach.
func (c *ttyControl) resize(w proto.Winsize) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.done:
	case c.master != nil:
		_ = SetWinsize(c.master, w.Rows, w.Cols)
	default:
		c.pending = &w
	}
}

// attach makes master the terminal that resizes apply to, with the last
// size asked so far.
func (c *ttyControl) attach(master *os.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.master = master
	if c.pending != nil {
		_ = SetWinsize(master, c.pending.Rows, c.pending.Cols)
	}
}

// detach ends the resizes: the terminal is about to close.
func (c *ttyControl) detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.master, c.done = nil, true
}

type ttyKey struct{}

// withTTY returns ctx carrying the request's ttyControl, for runExecTTY.
func withTTY(ctx context.Context, c *ttyControl) context.Context {
	return context.WithValue(ctx, ttyKey{}, c)
}

// ttyOf returns ctx's ttyControl, or a new one that nothing resizes.
func ttyOf(ctx context.Context) *ttyControl {
	if c, ok := ctx.Value(ttyKey{}).(*ttyControl); ok {
		return c
	}
	return &ttyControl{}
}

// resize applies a KindResize frame to its request: ignored when the
// request is gone or has no terminal, or the payload is malformed (the
// library's frames are trusted, a resize is no reason to drop a channel).
func (s *server) resize(f proto.Frame) {
	w, err := proto.DecodeWinsize(f.Payload)
	if err != nil {
		return
	}
	s.mu.Lock()
	rq := s.reqs[f.ID]
	s.mu.Unlock()
	if rq != nil && rq.tty != nil {
		rq.tty.resize(w)
	}
}

// ttyAttr is how a reaper starts a command on a terminal: in a new session,
// with its stdin (the terminal) as the controlling terminal.
func ttyAttr(tty bool) *syscall.SysProcAttr {
	if !tty {
		return nil
	}
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}
