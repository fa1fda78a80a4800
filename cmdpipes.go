package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

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
