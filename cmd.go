package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Cmd is a shell command prepared to run in the sandbox, in the manner of
// os/exec.Cmd. The command string runs with sh -c, in its own process
// group: when its Timeout passes or its context ends, the whole process
// tree is killed, background children included.
//
// A Cmd cannot be reused after Start.
type Cmd struct {
	// Command is the shell command line.
	Command string
	// Env adds "KEY=value" variables to the container's environment.
	Env []string
	// Dir is where the command runs; relative to the sandbox's working
	// directory, which is also the default.
	Dir string
	// User runs the command as another user; default the sandbox's user.
	User string
	// Timeout kills the command after this long; 0 means no timeout.
	Timeout time.Duration
	// Stdin feeds the command's standard input; nil means no input.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output as it is produced; nil
	// discards it. When both are the same writer, the two streams are
	// merged in the order the command wrote them.
	Stdout, Stderr io.Writer
	// TTY runs the command on a pseudo-terminal of this size, as its
	// controlling terminal (cmd_tty.go): Stdin is typed on it (the
	// terminal echoes it, and Ctrl-C, "\x03", interrupts), Stdout gets
	// what it shows, escape sequences and "\r\n" line ends included, and
	// Stderr is unused (the terminal is stderr too). See Resize.
	TTY *Winsize

	// ProcessState describes the command once Wait returns.
	ProcessState *ProcessState

	ctx  context.Context
	s    *DockerSandbox
	call pending
	// callCtx is the call's context: ctx with a backstop past Timeout,
	// ended by stopCall.
	callCtx  context.Context
	stopCall context.CancelFunc
	done     bool
	shared   bool // Execute's own writers: the shared channel may carry it

	// The call's outcome, set before awaited is closed (see Start).
	awaited chan struct{}
	res     *proto.Result
	callErr error
	// Pipes made by StdinPipe, StdoutPipe and StderrPipe (see cmdpipes.go).
	outPipes []*outPipe
	inPipe   *io.PipeReader
}

// ProcessState is the outcome of a finished command.
type ProcessState struct {
	exitCode  int
	timedOut  bool
	oomKilled bool
}

// ExitCode is the command's exit status: 128+N when a signal N killed it,
// 124 when its timeout did.
func (p *ProcessState) ExitCode() int { return p.exitCode }

// TimedOut reports whether the command was killed by its timeout.
func (p *ProcessState) TimedOut() bool { return p.timedOut }

// OOMKilled reports whether the kernel killed the command for exceeding the
// sandbox's memory limit (its exit code is then 137).
func (p *ProcessState) OOMKilled() bool { return p.oomKilled }

// Success reports whether the command exited with status 0.
func (p *ProcessState) Success() bool { return p.exitCode == 0 }

// ExitError is the error of a command that ran but did not succeed.
type ExitError struct {
	*ProcessState

	// Stderr holds the command's standard error when Output ran it with
	// Stderr unset, as os/exec does: at most its first and last 32 KiB,
	// with a line saying how many bytes were left out between them.
	Stderr []byte
}

// Error says how the command ended: "exit status N", a timeout or an
// out-of-memory kill.
func (e *ExitError) Error() string {
	if e.timedOut {
		return "command timed out"
	}
	if e.oomKilled {
		return "command killed: out of memory (exit status 137)"
	}
	return fmt.Sprintf("exit status %d", e.exitCode)
}

// Command returns a Cmd that runs command in the sandbox. When ctx ends
// before the command does, the command is killed and Wait returns ctx's
// error.
func (s *DockerSandbox) Command(ctx context.Context, command string) *Cmd {
	return &Cmd{Command: command, ctx: ctx, s: s}
}

// Start starts the command without waiting for it.
func (c *Cmd) Start() error {
	if c.s == nil {
		return errors.New("sandbox: Cmd not made by DockerSandbox.Command")
	}
	if c.call != nil || c.done {
		return errors.New("sandbox: Cmd already started")
	}
	if c.Command == "" {
		c.closePipes()
		return ErrEmptyCommand
	}
	if c.Timeout < 0 {
		c.closePipes()
		return fmt.Errorf("sandbox: timeout %v is negative", c.Timeout)
	}
	dir := c.s.opts.workingDir
	if c.Dir != "" {
		dir = path.Join(dir, c.Dir)
		if path.IsAbs(c.Dir) {
			dir = path.Clean(c.Dir)
		}
	}
	req := proto.Request{
		Op:       proto.OpExec,
		Command:  c.Command,
		Env:      c.Env,
		Dir:      dir,
		Timeout:  c.Timeout.Milliseconds(),
		Combined: c.Stdout != nil && sameWriter(c.Stdout, c.Stderr),
		Stdin:    c.Stdin != nil,
	}
	if c.Timeout > 0 && req.Timeout == 0 {
		req.Timeout = 1 // sub-millisecond timeouts still time out
	}
	co := callOptions{user: c.User, stdin: c.Stdin, stdout: c.Stdout, stderr: c.Stderr, shared: c.shared && c.Stdin == nil}
	if err := c.ttyRequest(&req, &co); err != nil {
		c.closePipes()
		return err
	}
	// The helper enforces the timeout; should it fail to (stopped from
	// inside the sandbox), the library ends the call a little later.
	c.callCtx, c.stopCall = context.WithCancel(c.ctx)
	if c.Timeout > 0 {
		c.callCtx, c.stopCall = context.WithTimeoutCause(c.ctx, c.Timeout+timeoutBackstop, errTimeoutMissed)
	}
	if err := c.s.enter(c.callCtx); err != nil {
		c.stopCall()
		c.done = true
		c.closePipes()
		return err
	}
	call, err := c.s.start(c.callCtx, req, co)
	if err != nil {
		c.s.leave()
		c.stopCall()
		c.done = true
		c.closePipes()
		return err
	}
	c.call = call
	// The output is relayed from now on, as os/exec copies it from Start:
	// a pipe can be read before Wait.
	c.awaited = make(chan struct{})
	go func() {
		c.res, c.callErr = c.s.await(call)
		c.s.leave()
		for _, p := range c.outPipes {
			p.closeWrite() // the reader gets io.EOF once it read everything
		}
		close(c.awaited)
	}()
	return nil
}

// Wait waits for the command to finish, then closes the pipes made by
// StdinPipe, StdoutPipe and StderrPipe. It returns nil on exit status 0,
// an *ExitError for another status or a timeout, and the context's error
// when the context ended first (the command is killed then).
func (c *Cmd) Wait() error {
	if c.call == nil {
		return errors.New("sandbox: Cmd not started")
	}
	if c.done {
		return errors.New("sandbox: Wait already called")
	}
	c.done = true
	<-c.awaited
	c.closePipes()
	res, err := c.res, c.callErr
	if err != nil && context.Cause(c.callCtx) == errTimeoutMissed {
		// Ended by the library's backstop, the command killed on its
		// cancel or by await: a timeout all the same.
		res, err = &proto.Result{ExitCode: proto.TimeoutExitCode, TimedOut: true}, nil
	}
	c.stopCall()
	err = c.s.goneOr(c.ctx, err)
	if res != nil {
		c.ProcessState = &ProcessState{exitCode: res.ExitCode, timedOut: res.TimedOut, oomKilled: res.OOMKilled}
	}
	if err != nil {
		return err
	}
	if res.Error != nil {
		return &commandError{res.Error.Err()}
	}
	if !c.ProcessState.Success() {
		return &ExitError{ProcessState: c.ProcessState}
	}
	return nil
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// commandError is a command that could not be started in the container,
// e.g. a missing directory.
type commandError struct{ err error }

func (e *commandError) Error() string { return "sandbox: start command: " + e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// sameWriter reports whether a and b are the same writer, without panicking
// on incomparable types (as os/exec does).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }()
	return a == b
}
