package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"syscall"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// procCall runs a process request on the shared channel (or an exec of its
// own) and turns the helper's error codes into the typed errors. in, when
// not nil, is the request's input; out receives its output; p, when not
// nil, is the process asked about (for error messages).
func (s *DockerSandbox) procCall(ctx context.Context, req proto.Request, in []byte, p *Process, out ...io.Writer) (*proto.Result, error) {
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
		case proto.CodeBadRequest:
			if s := e.Message; len(s) > 17 && s[:17] == "unknown operation" {
				return nil, fmt.Errorf("%w: the sandbox's helper cannot run processes (%s); it predates this library: make a new sandbox", ErrProtocolVersion, procClip(e.Message))
			}
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
