package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"sync"
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
	// Command is the shell command line, of at most MaxCommandBytes
	// (16 MiB; Start refuses a longer one with ErrCommandTooLong).
	Command string
	// Env adds "KEY=value" variables to the container's environment.
	Env []string
	// Dir is where the command runs; relative to the sandbox's working
	// directory, which is also the default.
	Dir string
	// User runs the command as another user; default the sandbox's user.
	// A user (or group) the sandbox does not have is ErrUnknownUser, from
	// Start (see ExecUser).
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
	// controlling terminal: Stdin is typed on it (the
	// terminal echoes it, and Ctrl-C, "\x03", interrupts), Stdout gets
	// what it shows, escape sequences and "\r\n" line ends included, and
	// Stderr is unused (the terminal is stderr too). See Resize.
	TTY *Winsize

	// ProcessState describes the command once Wait returns.
	ProcessState *ProcessState

	ctx  context.Context
	s    *Sandbox
	call pending
	// op observes the command from Start to Wait, unless observed: a
	// call that runs it (Execute) observes it.
	op       *op
	observed bool
	// callCtx is the call's context: ctx with a backstop past Timeout,
	// ended by stopCall.
	callCtx  context.Context
	stopCall context.CancelFunc
	done     bool
	shared   bool // Execute's own writers: the shared channel may carry it
	// Execute's ExecCapture, and what the helper said it kept.
	capture  *proto.Capture
	captured *proto.Captured

	// The call's outcome, set before awaited is closed (see Start).
	awaited chan struct{}
	res     *proto.Result
	callErr error
	// Pipes made by StdinPipe, StdoutPipe and StderrPipe (below).
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
func (s *Sandbox) Command(ctx context.Context, command string) *Cmd {
	return &Cmd{Command: command, ctx: ctx, s: s}
}

// Start starts the command without waiting for it.
func (c *Cmd) Start() error {
	if c.s == nil {
		return errors.New("sandbox: Cmd not made by Sandbox.Command")
	}
	if c.call != nil || c.done {
		return errors.New("sandbox: Cmd already started")
	}
	if !c.observed {
		c.ctx, c.op = c.s.begin(c.ctx, "Command")
		c.op.command(c.Command)
	}
	if err := c.start(); err != nil {
		c.op.end(&err)
		return err
	}
	return nil
}

// start is Start past its checks of c.
func (c *Cmd) start() error {
	if err := checkCommand(c.Command); err != nil {
		c.closePipes()
		return err
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
		Env:      traceEnv(c.ctx, c.Env),
		Dir:      dir,
		Timeout:  c.Timeout.Milliseconds(),
		Combined: c.Stdout != nil && sameWriter(c.Stdout, c.Stderr),
		Stdin:    c.Stdin != nil,
		Capture:  c.capture,
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
	err := c.wait()
	if c.ProcessState != nil {
		c.op.exit(c.ProcessState.ExitCode())
	}
	c.op.end(&err)
	return err
}

// wait is Wait past its checks of c.
func (c *Cmd) wait() error {
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
		c.captured = res.Captured
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

// Winsize is the size of a terminal in character cells.
type Winsize struct {
	Rows, Cols int
}

// checkWinsize checks a terminal size: 1 to 65535 rows and columns.
func checkWinsize(w Winsize) error {
	if w.Rows <= 0 || w.Cols <= 0 || w.Rows > 0xffff || w.Cols > 0xffff {
		return fmt.Errorf("%w: terminal size %dx%d (rows and columns go from 1 to 65535)", ErrInvalidOption, w.Rows, w.Cols)
	}
	return nil
}

// ttyRequest makes req and co run c on a terminal when c.TTY is set: the
// request carries the size, always on an exec of its own (Resize writes to
// it), and the helper must say it has terminals.
func (c *Cmd) ttyRequest(req *proto.Request, co *callOptions) error {
	if c.TTY == nil {
		return nil
	}
	if err := checkWinsize(*c.TTY); err != nil {
		return err
	}
	req.TTY = &proto.Winsize{Rows: uint16(c.TTY.Rows), Cols: uint16(c.TTY.Cols)}
	req.Combined = false
	co.shared, co.stderr = false, nil
	return nil
}

// Resize changes the size of the terminal of a command started with TTY
// set, as a terminal window's resize does: its foreground program gets
// SIGWINCH and sees the new size. It returns once the size is sent (ctx
// bounds the send); a command that is not running on a terminal is
// ErrNoTerminal, one that finished ErrProcessDone.
func (c *Cmd) Resize(ctx context.Context, rows, cols int) (err error) {
	if c.s != nil {
		var o *op
		ctx, o = c.s.begin(ctx, "Cmd.Resize")
		defer o.end(&err)
	}
	if c.TTY == nil {
		return ErrNoTerminal
	}
	w := Winsize{Rows: rows, Cols: cols}
	if err := checkWinsize(w); err != nil {
		return err
	}
	if c.call == nil {
		return errors.New("sandbox: Resize before Start")
	}
	select {
	case <-c.awaited:
		return fmt.Errorf("sandbox: resize: %w", ErrProcessDone)
	default:
	}
	hc, ok := c.call.(*helperCall)
	if !ok {
		return ErrNoTerminal
	}
	payload := proto.EncodeWinsize(proto.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
	// A helper that stops reading cannot hold the caller past ctx: the
	// write goes on alone until the call's stall watch drops the
	// connection.
	sent := make(chan error, 1)
	go func() { sent <- hc.out.WriteFrameContext(ctx, proto.KindResize, execRequestID, payload) }()
	select {
	case err = <-sent:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-c.awaited:
			return fmt.Errorf("sandbox: resize: %w", ErrProcessDone)
		default:
		}
		return fmt.Errorf("sandbox: resize: %w", err)
	}
	return nil
}

// Output runs the command and returns its standard output, as
// os/exec.Cmd.Output does: an error is usually an *ExitError, whose Stderr
// holds the command's standard error when c.Stderr was nil. The output is
// held in memory up to the sandbox's max download bytes (see
// WithMaxDownloadBytes); a command that prints more is killed and the error
// wraps ErrTooLarge. Stdout must not be set.
func (c *Cmd) Output() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("sandbox: Stdout already set")
	}
	stdout := c.outputBuffer()
	c.Stdout = stdout
	var stderr *prefixSuffixSaver
	if c.Stderr == nil {
		stderr = &prefixSuffixSaver{N: 32 << 10}
		c.Stderr = stderr
	}
	err := c.Run()
	var ee *ExitError
	if stderr != nil && errors.As(err, &ee) {
		ee.Stderr = stderr.Bytes()
	}
	return stdout.buf.Bytes(), err
}

// CombinedOutput runs the command and returns its standard output and
// standard error merged in the order the command wrote them, as
// os/exec.Cmd.CombinedOutput does, held in memory as Output holds it.
// Stdout and Stderr must not be set.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("sandbox: Stdout already set")
	}
	if c.Stderr != nil {
		return nil, errors.New("sandbox: Stderr already set")
	}
	out := c.outputBuffer()
	c.Stdout, c.Stderr = out, out
	err := c.Run()
	return out.buf.Bytes(), err
}

// outputBuffer returns the buffer of Output and CombinedOutput.
func (c *Cmd) outputBuffer() *limitBuffer {
	limit := int64(DefaultMaxDownloadBytes)
	if c.s != nil {
		limit = c.s.opts.maxDownload
	}
	return &limitBuffer{max: limit}
}

// StdinPipe returns a pipe connected to the command's standard input when
// it starts, as os/exec's is. Wait closes it after the command exits; close
// it sooner for a command that reads until the end of its input. Stdin
// must not be set, and the command not started.
func (c *Cmd) StdinPipe() (io.WriteCloser, error) {
	if c.Stdin != nil {
		return nil, errors.New("sandbox: Stdin already set")
	}
	if c.started() {
		return nil, errors.New("sandbox: StdinPipe after the command started")
	}
	pr, pw := io.Pipe()
	c.Stdin, c.inPipe = pr, pr
	return pw, nil
}

// StdoutPipe returns a pipe connected to the command's standard output
// when it starts, as os/exec's is: read it to its end (io.EOF comes when
// the command has finished), then call Wait, which closes it. Calling Wait
// before the reads are done, or Run, is incorrect for the same reason as
// with os/exec. The pipe holds up to 64 KiB the reader has not taken (as
// an OS pipe does); beyond that the command waits for the reader, within
// its timeout and context. Closing the pipe before its end kills the
// command (as SIGPIPE would), and Wait returns the write error. Stdout
// must not be set, and the command not started.
func (c *Cmd) StdoutPipe() (io.ReadCloser, error) {
	if c.Stdout != nil {
		return nil, errors.New("sandbox: Stdout already set")
	}
	if c.started() {
		return nil, errors.New("sandbox: StdoutPipe after the command started")
	}
	p := c.newOutPipe()
	c.Stdout = p
	return p, nil
}

// StderrPipe is StdoutPipe for the command's standard error.
func (c *Cmd) StderrPipe() (io.ReadCloser, error) {
	if c.Stderr != nil {
		return nil, errors.New("sandbox: Stderr already set")
	}
	if c.started() {
		return nil, errors.New("sandbox: StderrPipe after the command started")
	}
	p := c.newOutPipe()
	c.Stderr = p
	return p, nil
}

func (c *Cmd) started() bool { return c.call != nil || c.done }

func (c *Cmd) newOutPipe() *outPipe {
	// The call's context (set by Start) covers the caller's context and
	// the library's backstop past the timeout.
	p := &outPipe{max: pipeBuffer, changed: make(chan struct{}), callCtx: func() context.Context { return c.callCtx }}
	c.outPipes = append(c.outPipes, p)
	return p
}

// closePipes closes the pipes' ends that the caller holds: the command
// is over, or never started.
func (c *Cmd) closePipes() {
	for _, p := range c.outPipes {
		p.closeWrite()
		_ = p.Close()
	}
	if c.inPipe != nil {
		_ = c.inPipe.Close()
	}
}

// pipeBuffer is how much an output pipe holds that its reader has not
// read (an OS pipe's 64 KiB).
const pipeBuffer = 64 << 10

// outPipe carries a command's output to the reader of StdoutPipe or
// StderrPipe: the call writes (blocking while the buffer is full, until the
// reader reads, closes, or the command's context ends), the caller reads.
type outPipe struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	wclosed bool // no more output: the reader gets io.EOF once buf is empty
	rclosed bool // the reader closed: writes fail
	changed chan struct{}
	callCtx func() context.Context // the call's, whose end fails a waiting write
}

// wake tells waiters that the pipe changed (mu held).
func (p *outPipe) wake() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *outPipe) Write(b []byte) (int, error) {
	n := 0
	for {
		p.mu.Lock()
		if p.rclosed {
			p.mu.Unlock()
			return n, errPipeClosed
		}
		if k := min(p.max-len(p.buf), len(b)-n); k > 0 {
			p.buf = append(p.buf, b[n:n+k]...)
			n += k
			p.wake()
		}
		if n == len(b) {
			p.mu.Unlock()
			return n, nil
		}
		changed := p.changed
		p.mu.Unlock()
		ctx := p.callCtx()
		select {
		case <-changed:
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
}

func (p *outPipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		switch {
		case p.rclosed:
			p.mu.Unlock()
			return 0, errPipeClosed
		case len(p.buf) > 0:
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil
			}
			p.wake()
			p.mu.Unlock()
			return n, nil
		case p.wclosed:
			p.mu.Unlock()
			return 0, io.EOF
		}
		changed := p.changed
		p.mu.Unlock()
		<-changed
	}
}

// Close closes the reader's end: later reads and writes fail.
func (p *outPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.rclosed {
		p.rclosed, p.buf = true, nil
		p.wake()
	}
	return nil
}

// closeWrite ends the output: the reader gets io.EOF after the rest.
func (p *outPipe) closeWrite() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.wclosed {
		p.wclosed = true
		p.wake()
	}
}

// errPipeClosed: a read or write on an output pipe whose reader was closed
// (by its holder, or by Wait).
var errPipeClosed = errors.New("sandbox: read/write on closed pipe")

// limitBuffer keeps what is written to it, up to max bytes; more is
// ErrTooLarge, which ends the command.
type limitBuffer struct {
	buf bytes.Buffer
	max int64
}

func (w *limitBuffer) Write(p []byte) (int, error) {
	if int64(w.buf.Len())+int64(len(p)) > w.max {
		return 0, fmt.Errorf("%w: the command's output is over %d bytes (see WithMaxDownloadBytes)", ErrTooLarge, w.max)
	}
	return w.buf.Write(p)
}

// prefixSuffixSaver keeps the first and last N bytes written to it, as
// os/exec's does for ExitError.Stderr.
type prefixSuffixSaver struct {
	N         int
	prefix    []byte
	suffix    []byte // a ring once len(suffix) == N
	suffixOff int
	skipped   int64
}

func (w *prefixSuffixSaver) Write(p []byte) (int, error) {
	lenp := len(p)
	p = w.fill(&w.prefix, p)
	if over := len(p) - w.N; over > 0 {
		p = p[over:]
		w.skipped += int64(over)
	}
	p = w.fill(&w.suffix, p)
	for len(p) > 0 {
		n := copy(w.suffix[w.suffixOff:], p)
		p = p[n:]
		w.skipped += int64(n)
		w.suffixOff += n
		if w.suffixOff == w.N {
			w.suffixOff = 0
		}
	}
	return lenp, nil
}

func (w *prefixSuffixSaver) fill(dst *[]byte, p []byte) []byte {
	if room := w.N - len(*dst); room > 0 {
		k := min(len(p), room)
		*dst = append(*dst, p[:k]...)
		p = p[k:]
	}
	return p
}

// Bytes returns the prefix, a line saying how many bytes were left out,
// and the suffix.
func (w *prefixSuffixSaver) Bytes() []byte {
	if w.suffix == nil {
		return w.prefix
	}
	if w.skipped == 0 {
		return append(w.prefix, w.suffix...)
	}
	var b bytes.Buffer
	b.Write(w.prefix)
	b.WriteString("\n... omitting " + strconv.FormatInt(w.skipped, 10) + " bytes ...\n")
	b.Write(w.suffix[w.suffixOff:])
	b.Write(w.suffix[:w.suffixOff])
	return b.Bytes()
}
