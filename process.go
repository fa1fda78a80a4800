package sandbox

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Errors of processes (see Start). Test for them with errors.Is.
var (
	// ErrProcessNotFound: the sandbox has no process with the ID (never
	// started, forgotten, or the sandbox's container restarted since).
	ErrProcessNotFound = errors.New("sandbox: process not found")
	// ErrProcessDone: the process exited; it takes no input or signal.
	ErrProcessDone = errors.New("sandbox: process already exited")
	// ErrStdinClosed: CloseStdin was called; the process takes no more input.
	ErrStdinClosed = errors.New("sandbox: process stdin closed")
	// ErrTooManyProcesses: the sandbox's process table is full of running
	// processes (it holds 1024, forgetting the oldest exited ones first).
	ErrTooManyProcesses = errors.New("sandbox: too many processes")
)

// ProcState is whether a process runs.
type ProcState string

// Process states.
const (
	ProcessRunning ProcState = "running"
	ProcessExited  ProcState = "exited"
)

// ProcessInfo describes a process of the sandbox.
type ProcessInfo struct {
	ID      string
	Command string
	State   ProcState
	// ExitCode is the shell's exit status once exited: 128+n when signal
	// n ended it.
	ExitCode int
	// Signal is the signal that ended the process, 0 if none did.
	Signal  syscall.Signal
	Started time.Time
	Ended   time.Time // zero while running
	// TTY reports a process that runs on a pseudo-terminal (WithTTY).
	TTY bool
	// LogSize is the size of the process's output log in bytes.
	LogSize int
}

// Running reports whether the process was running when the info was taken.
func (i ProcessInfo) Running() bool { return i.State == ProcessRunning }

// Process is a command that the sandbox's helper runs in the background
// (see Start). Its methods may be called from several goroutines; every
// call asks the helper, so a Process found again with DockerSandbox.Process
// (from any program that attached to the sandbox) behaves the same.
type Process struct {
	s  *DockerSandbox
	id string
}

// ID returns the process's ID, unique in its sandbox.
func (p *Process) ID() string { return p.id }

// Start runs command with sh -c in the background and returns at once. The
// sandbox's helper (its PID 1), not the calling program, owns the process:
// it keeps running when this program exits or the shared channel breaks,
// and any program that attaches to the sandbox finds it again with
// Process or Processes. It runs as the sandbox's user, in the working
// directory, in a session of its own; its stdout and stderr go, interleaved
// in the order written, to an output log of DefaultLogSize bytes
// (WithLogSize) that keeps the latest output (Read, Follow); its stdin is
// a pipe that stays open until CloseStdin (or, with WithTTY, a terminal).
// Running processes count as activity for the idle timeout unless
// WithProcessKeepAlive(false); Close ends them all with the container.
// Start does not wait for the exec: a directory the user may not enter
// ends the process with status 127 and the reason in its output (as does,
// rarely, a launch that a command of the sandbox broke by killing the
// helper's launcher at that moment).
func (s *DockerSandbox) Start(ctx context.Context, command string, opts ...ProcessOption) (*Process, error) {
	if command == "" {
		return nil, ErrEmptyCommand
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
	req := proto.Request{Op: proto.OpProcStart, Command: command, Env: cfg.env, Dir: dir, Proc: &proto.ProcRequest{
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
	return &Process{s: s, id: info.ID}, nil
}

// Processes lists the sandbox's processes, running and exited, oldest
// first. The table keeps at most 1024 processes: beyond that, the oldest
// exited ones are forgotten.
func (s *DockerSandbox) Processes(ctx context.Context) ([]ProcessInfo, error) {
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

// Process finds the process with the given ID (from Start or Processes,
// possibly of another program): ErrProcessNotFound when there is none.
func (s *DockerSandbox) Process(ctx context.Context, id string) (*Process, error) {
	if err := checkProcID(id); err != nil {
		return nil, err
	}
	p := &Process{s: s, id: id}
	if _, err := p.Info(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Info returns the process's current state.
func (p *Process) Info(ctx context.Context) (ProcessInfo, error) {
	res, err := p.call(ctx, proto.OpProcInfo, proto.ProcRequest{})
	if err != nil {
		return ProcessInfo{}, err
	}
	return p.info(res)
}

// Write writes data to the process's stdin (its terminal's input with
// WithTTY), in requests of at most MaxProcessRead bytes, and returns how
// many bytes it took. It blocks while the process
// does not read and the pipe is full, until ctx ends. A process that
// exited is ErrProcessDone; after CloseStdin, ErrStdinClosed.
func (p *Process) Write(ctx context.Context, data []byte) (int, error) {
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
// terminal (WithTTY) it types the end-of-file character (Ctrl-D) instead.
func (p *Process) CloseStdin(ctx context.Context) error {
	_, err := p.call(ctx, proto.OpProcCloseStdin, proto.ProcRequest{})
	return err
}

// Signal sends sig to the process's group (its shell and the commands the
// shell runs in the foreground, as Ctrl-C on a terminal does). A process
// that exited is ErrProcessDone.
func (p *Process) Signal(ctx context.Context, sig syscall.Signal) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("sandbox: invalid signal %d", sig)
	}
	_, err := p.call(ctx, proto.OpProcSignal, proto.ProcRequest{Signal: int(sig)})
	return err
}

// Kill kills the process's whole tree with SIGKILL: everything it started,
// however it detached (background, setsid, double fork), and returns once
// they are dead. A process that exited is ErrProcessDone.
func (p *Process) Kill(ctx context.Context) error {
	_, err := p.call(ctx, proto.OpProcKill, proto.ProcRequest{})
	return err
}

// Resize sets the size of the terminal of a process started WithTTY; its
// foreground program gets SIGWINCH.
func (p *Process) Resize(ctx context.Context, rows, cols int) error {
	if err := checkProcWinsize(rows, cols); err != nil {
		return err
	}
	_, err := p.call(ctx, proto.OpProcResize, proto.ProcRequest{Rows: rows, Cols: cols})
	return err
}

// Wait waits for the process to exit, until ctx ends, and returns its
// final info (the exit code is in the info, not an error).
func (p *Process) Wait(ctx context.Context) (ProcessInfo, error) {
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
