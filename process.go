package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// ProcessStatus is whether a process runs.
type ProcessStatus string

// Process states.
const (
	ProcessRunning ProcessStatus = "running"
	ProcessExited  ProcessStatus = "exited"
)

// ProcessInfo describes a process of the sandbox.
type ProcessInfo struct {
	ID string
	// Command is the process's command, its first 8 KiB when longer.
	Command string
	State   ProcessStatus
	// ExitCode is the shell's exit status once exited: 128+n when signal
	// n ended it.
	ExitCode int
	// Signal is the signal that ended the process, 0 if none did.
	Signal  syscall.Signal
	Started time.Time
	Ended   time.Time // zero while running
	// TTY reports a process that runs on a pseudo-terminal (ProcessTTY).
	TTY bool
	// LogSize is the size of the process's output log in bytes.
	LogSize int
}

// Running reports whether the process was running when the info was taken.
func (i ProcessInfo) Running() bool { return i.State == ProcessRunning }

// Process is a command that the sandbox's helper runs in the background
// (see StartProcess). Its methods may be called from several goroutines; every
// call asks the helper, so a Process found again with Sandbox.Process
// (from any program that attached to the sandbox) behaves the same.
type Process struct {
	s  *Sandbox
	id string
}

// ID returns the process's ID, unique in its sandbox.
func (p *Process) ID() string { return p.id }

// StartProcess runs command with sh -c in the background and returns at once. The
// sandbox's helper (its PID 1), not the calling program, owns the process:
// it keeps running when this program exits or the shared channel breaks,
// and any program that attaches to the sandbox finds it again with
// Process or Processes. It runs as the sandbox's user, in the working
// directory, in a session of its own (there is no user option); the
// command may be up to MaxCommandBytes long, as for Execute (ProcessInfo
// keeps its first 8 KiB); its stdout and stderr go, interleaved
// in the order written, to an output log of DefaultLogSize bytes
// (ProcessLogSize) that keeps the latest output (Read, Follow); its stdin is
// a pipe that stays open until CloseStdin (or, with ProcessTTY, a terminal).
// Running processes count as activity for the idle timeout unless
// WithProcessKeepAlive(false); Close ends them all with the container.
// StartProcess does not wait for the exec: a directory the user may not enter
// ends the process with status 127 and the reason in its output (as does,
// rarely, a launch that a command of the sandbox broke by killing the
// helper's launcher at that moment).
func (s *Sandbox) StartProcess(ctx context.Context, command string, opts ...ProcessOption) (_ *Process, err error) {
	ctx, op := s.begin(ctx, "StartProcess")
	defer op.end(&err)
	op.command(command)
	if err := checkCommand(command); err != nil {
		return nil, err
	}
	var cfg processConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	dir := s.opts.workingDir
	if cfg.dir != "" {
		d, err := s.abs("start", cfg.dir)
		if err != nil {
			return nil, err
		}
		dir = d
	}
	req := proto.Request{Op: proto.OpProcStart, Command: command, Env: traceEnv(ctx, cfg.env), Dir: dir, Proc: &proto.ProcRequest{
		LogSize: cfg.logSize, TTY: cfg.tty, Rows: cfg.rows, Cols: cfg.cols,
	}}
	res, err := s.procCall(ctx, req, nil, nil)
	if err != nil {
		return nil, err
	}
	info, err := procInfo(res.Proc.Info)
	if err != nil {
		return nil, err
	}
	op.str("sandbox.process", info.ID)
	return &Process{s: s, id: info.ID}, nil
}

// Processes lists the sandbox's processes, running and exited, oldest
// first. The table keeps at most 1024 processes: beyond that, the oldest
// exited ones are forgotten.
func (s *Sandbox) Processes(ctx context.Context) (_ []ProcessInfo, err error) {
	ctx, op := s.begin(ctx, "Processes")
	defer op.end(&err)
	res, err := s.procCall(ctx, proto.Request{Op: proto.OpProcList, Proc: &proto.ProcRequest{}}, nil, nil)
	if err != nil {
		return nil, err
	}
	if len(res.Procs) > proto.MaxProcs {
		return nil, fmt.Errorf("%w: %d processes listed, more than %d", errHelperLied, len(res.Procs), proto.MaxProcs)
	}
	out := make([]ProcessInfo, 0, len(res.Procs))
	for _, pi := range res.Procs {
		info, err := procInfo(pi)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Process finds the process with the given ID (from StartProcess or Processes,
// possibly of another program): ErrProcessNotFound when there is none.
func (s *Sandbox) Process(ctx context.Context, id string) (_ *Process, err error) {
	ctx, op := s.begin(ctx, "Process")
	defer op.end(&err)
	if err := checkProcID(id); err != nil {
		return nil, err
	}
	op.str("sandbox.process", id)
	p := &Process{s: s, id: id}
	if _, err := p.current(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Info returns the process's current state.
func (p *Process) Info(ctx context.Context) (_ ProcessInfo, err error) {
	ctx, op := p.begin(ctx, "Process.Info")
	defer op.end(&err)
	return p.current(ctx)
}

// current asks the helper for the process's info.
func (p *Process) current(ctx context.Context) (ProcessInfo, error) {
	res, err := p.call(ctx, proto.OpProcInfo, proto.ProcRequest{})
	if err != nil {
		return ProcessInfo{}, err
	}
	return p.info(res)
}

// begin is Sandbox.begin for the process call name, with the process's
// ID in the record and the span.
func (p *Process) begin(ctx context.Context, name string) (context.Context, *op) {
	ctx, op := p.s.begin(ctx, name)
	op.str("sandbox.process", p.id)
	return ctx, op
}

// Write writes data to the process's stdin (its terminal's input with
// ProcessTTY), in requests of at most MaxProcessRead bytes, and returns how
// many bytes it took. It blocks while the process
// does not read and the pipe is full, until ctx ends. A process that
// exited is ErrProcessDone; after CloseStdin, ErrStdinClosed.
func (p *Process) Write(ctx context.Context, data []byte) (_ int, err error) {
	ctx, op := p.begin(ctx, "Process.Write")
	defer op.end(&err)
	op.bytes(int64(len(data)))
	written := 0
	for len(data) > 0 {
		chunk := data[:min(len(data), MaxProcessRead)]
		res, err := p.s.procCall(ctx, proto.Request{Op: proto.OpProcWrite, Proc: &proto.ProcRequest{ID: p.id}}, chunk, p)
		if err != nil {
			return written, err
		}
		n := res.Proc.Written
		if n <= 0 || n > len(chunk) {
			return written, fmt.Errorf("%w: a write of %d bytes took %d", errHelperLied, len(chunk), n)
		}
		written += n
		data = data[n:]
	}
	return written, nil
}

// CloseStdin closes the process's stdin: it reads end of file. On a
// terminal (ProcessTTY) it types the end-of-file character (Ctrl-D) instead.
func (p *Process) CloseStdin(ctx context.Context) (err error) {
	ctx, op := p.begin(ctx, "Process.CloseStdin")
	defer op.end(&err)
	_, err = p.call(ctx, proto.OpProcCloseStdin, proto.ProcRequest{})
	return err
}

// Signal sends sig to the process's group (its shell and the commands the
// shell runs in the foreground, as Ctrl-C on a terminal does). A process
// that exited is ErrProcessDone.
func (p *Process) Signal(ctx context.Context, sig syscall.Signal) (err error) {
	ctx, op := p.begin(ctx, "Process.Signal")
	defer op.end(&err)
	op.int("sandbox.signal", int64(sig))
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("sandbox: invalid signal %d", sig)
	}
	_, err = p.call(ctx, proto.OpProcSignal, proto.ProcRequest{Signal: int(sig)})
	return err
}

// Kill kills the process's whole tree with SIGKILL: everything it started,
// however it detached (background, setsid, double fork), and returns once
// they are dead. A process that exited is ErrProcessDone.
func (p *Process) Kill(ctx context.Context) (err error) {
	ctx, op := p.begin(ctx, "Process.Kill")
	defer op.end(&err)
	_, err = p.call(ctx, proto.OpProcKill, proto.ProcRequest{})
	return err
}

// Resize sets the size of the terminal of a process started ProcessTTY; its
// foreground program gets SIGWINCH.
func (p *Process) Resize(ctx context.Context, rows, cols int) (err error) {
	ctx, op := p.begin(ctx, "Process.Resize")
	defer op.end(&err)
	if err := checkProcWinsize(rows, cols); err != nil {
		return err
	}
	_, err = p.call(ctx, proto.OpProcResize, proto.ProcRequest{Rows: rows, Cols: cols})
	return err
}

// Wait waits for the process to exit, until ctx ends, and returns its
// final info (the exit code is in the info, not an error).
func (p *Process) Wait(ctx context.Context) (info ProcessInfo, err error) {
	ctx, op := p.begin(ctx, "Process.Wait")
	defer func() { op.processExit(info); op.end(&err) }()
	for {
		if err := ctx.Err(); err != nil {
			return ProcessInfo{}, err
		}
		res, err := p.call(ctx, proto.OpProcWait, proto.ProcRequest{WaitMs: waitSlice(ctx)})
		if err != nil {
			return ProcessInfo{}, err
		}
		info, err := p.info(res)
		if err != nil || !info.Running() {
			return info, err
		}
	}
}

// waitSlice is how long one wait or read request may wait in the helper:
// proto.MaxProcWait at most, less when ctx ends sooner.
func waitSlice(ctx context.Context) int64 {
	d := proto.MaxProcWait
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return max(d.Milliseconds(), 1)
}

// call runs a process operation on p.
func (p *Process) call(ctx context.Context, op string, pr proto.ProcRequest) (*proto.Result, error) {
	pr.ID = p.id
	return p.s.procCall(ctx, proto.Request{Op: op, Proc: &pr}, nil, p)
}

// info checks the info in res and that it is p's.
func (p *Process) info(res *proto.Result) (ProcessInfo, error) {
	info, err := procInfo(res.Proc.Info)
	if err == nil && info.ID != p.id {
		err = fmt.Errorf("%w: asked about process %q, answered about %q", errHelperLied, p.id, procClip(info.ID))
	}
	return info, err
}

// procCall runs a process request on the shared channel (or an exec of its
// own) and turns the helper's error codes into the typed errors. in, when
// not nil, is the request's input; out receives its output; p, when not
// nil, is the process asked about (for error messages).
func (s *Sandbox) procCall(ctx context.Context, req proto.Request, in []byte, p *Process, out ...io.Writer) (*proto.Result, error) {
	co := callOptions{shared: true}
	if in != nil {
		co.stdin = bytes.NewReader(in)
	}
	if len(out) > 0 {
		co.stdout = out[0]
	}
	res, err := s.call(ctx, req, co)
	if err != nil {
		return nil, err
	}
	if e := res.Error; e != nil {
		what := "process"
		if p != nil {
			what = fmt.Sprintf("process %s", p.id)
		}
		switch e.Code {
		case proto.CodeProcNotFound:
			return nil, fmt.Errorf("%w: %s", ErrProcessNotFound, procClip(req.Proc.ID))
		case proto.CodeProcDone:
			return nil, fmt.Errorf("%s: %w", what, ErrProcessDone)
		case proto.CodeStdinClosed:
			return nil, fmt.Errorf("%s: %w", what, ErrStdinClosed)
		case proto.CodeTooManyProcs:
			return nil, fmt.Errorf("%w: %s", ErrTooManyProcesses, procClip(e.Message))
		}
		return nil, fmt.Errorf("sandbox: %s %s: %w", req.Op, what, e.Err())
	}
	if res.Proc == nil && req.Op != proto.OpProcList {
		return nil, fmt.Errorf("%w: a %s answer without its result", errHelperLied, req.Op)
	}
	return res, nil
}

// procInfo checks a process's info from the helper and converts it.
func procInfo(pi proto.ProcInfo) (ProcessInfo, error) {
	if checkProcID(pi.ID) != nil {
		return ProcessInfo{}, fmt.Errorf("%w: an invalid process ID %q", errHelperLied, procClip(pi.ID))
	}
	if pi.Signal < 0 || pi.Signal > 64 || pi.LogSize < 0 || pi.LogSize > proto.MaxLogSize || len(pi.Command) > proto.MaxProcCommand {
		return ProcessInfo{}, fmt.Errorf("%w: bad process info for %s", errHelperLied, pi.ID)
	}
	info := ProcessInfo{
		ID: pi.ID, Command: pi.Command, State: ProcessExited, ExitCode: pi.ExitCode, Signal: syscall.Signal(pi.Signal),
		Started: pi.Started, Ended: pi.Ended, TTY: pi.TTY, LogSize: pi.LogSize,
	}
	if pi.Running {
		info.State, info.ExitCode, info.Signal, info.Ended = ProcessRunning, 0, 0, info.Ended.Truncate(0)
	}
	return info, nil
}

// checkProcID refuses an ID that no helper gives: empty, too long, or not
// printable ASCII.
func checkProcID(id string) error {
	if id == "" || len(id) > proto.MaxProcID {
		return fmt.Errorf("%w: invalid process ID %q", ErrProcessNotFound, procClip(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: invalid process ID %q", ErrProcessNotFound, procClip(id))
		}
	}
	return nil
}

// checkProcWinsize checks a terminal size.
func checkProcWinsize(rows, cols int) error {
	if rows <= 0 || cols <= 0 || rows > 0xffff || cols > 0xffff {
		return fmt.Errorf("sandbox: invalid terminal size %dx%d", rows, cols)
	}
	return nil
}

// procClip shortens s (from the container) for an error message.
func procClip(s string) string {
	const max = 100
	if len(s) > max {
		s = s[:max] + "..."
	}
	if !utf8.ValidString(s) {
		s = fmt.Sprintf("%q", s)
	}
	return s
}

// A ProcessOption adjusts one StartProcess.
type ProcessOption func(*processConfig) error

type processConfig struct {
	dir        string
	env        []string
	logSize    int
	tty        bool
	rows, cols int
}

// DefaultLogSize is the size of a process's output log unless ProcessLogSize
// says otherwise (1 MiB); MaxLogSize bounds it (64 MiB).
const (
	DefaultLogSize = 1 << 20
	MaxLogSize     = 64 << 20
)

// The helper's limits are the same (a negative constant does not convert
// to uint: a difference fails the build).
const (
	_ = uint(DefaultLogSize-proto.DefaultLogSize) + uint(proto.DefaultLogSize-DefaultLogSize)
	_ = uint(MaxLogSize-proto.MaxLogSize) + uint(proto.MaxLogSize-MaxLogSize)
)

// ProcessDir runs the process in dir (relative to the working directory).
func ProcessDir(dir string) ProcessOption {
	return func(c *processConfig) error {
		c.dir = dir
		return nil
	}
}

// ProcessEnv adds "KEY=value" environment variables for the process.
func ProcessEnv(env ...string) ProcessOption {
	return func(c *processConfig) error {
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
				return fmt.Errorf("sandbox: env %q: want KEY=value", kv)
			}
		}
		c.env = append(c.env, env...)
		return nil
	}
}

// ProcessLogSize sets the size of the process's output log in bytes (1 KiB to
// MaxLogSize; DefaultLogSize when not given). The log keeps the latest
// output; the memory is the sandbox's, taken as output comes.
func ProcessLogSize(n int) ProcessOption {
	return func(c *processConfig) error {
		if n < 1024 || n > MaxLogSize {
			return fmt.Errorf("sandbox: log size must be between 1024 and %d, got %d", MaxLogSize, n)
		}
		c.logSize = n
		return nil
	}
}

// ProcessTTY runs the process on a pseudo-terminal of rows x cols (stdin,
// stdout and stderr are the terminal, its controlling terminal; see
// Process.Resize). The log then holds what the terminal shows, escape
// sequences and all, with "\r\n" line ends.
func ProcessTTY(rows, cols int) ProcessOption {
	return func(c *processConfig) error {
		if err := checkProcWinsize(rows, cols); err != nil {
			return err
		}
		c.tty, c.rows, c.cols = true, rows, cols
		return nil
	}
}

// OutputDroppedError is Follow's report of skipped output: Dropped bytes
// in all, the first of them at cursor First. errors.Is(err,
// ErrOutputDropped) holds for it.
type OutputDroppedError struct {
	Dropped int64 // bytes skipped in all
	First   int64 // cursor of the first byte skipped
}

func (e *OutputDroppedError) Error() string {
	return fmt.Sprintf("%v: %d bytes from cursor %d on were not in the log when read (a larger ProcessLogSize keeps more)", ErrOutputDropped, e.Dropped, e.First)
}

// Is makes errors.Is(err, ErrOutputDropped) hold.
func (e *OutputDroppedError) Is(target error) bool { return target == ErrOutputDropped }

// dropTally counts what a Follow skipped.
type dropTally struct{ err *OutputDroppedError }

// add counts out's dropped bytes.
func (d *dropTally) add(out ProcessOutput) {
	if out.Dropped <= 0 {
		return
	}
	if d.err == nil {
		d.err = &OutputDroppedError{First: out.Cursor - out.Dropped}
	}
	d.err.Dropped += out.Dropped
}

// join adds the tally to err (nil: the tally alone, if any).
func (d *dropTally) join(err error) error {
	if d.err == nil {
		return err
	}
	if err == nil {
		return d.err
	}
	return errors.Join(err, d.err)
}
