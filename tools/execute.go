package tools

import (
	"context"
	"errors"
	"io/fs"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
)

func (e *env) execute(ctx context.Context, a *args) Result {
	command, _ := a.str("command", true)
	timeout, hasTimeout := a.bigInt("timeout")
	if r, bad := a.done(); bad {
		return r
	}
	var opts []sandbox.ExecOption
	if hasTimeout {
		if timeout.Sign() < 0 {
			return errorf("Error: timeout must be non-negative, got %s.", timeout)
		}
		maxSeconds := big.NewInt(int64(e.opts.MaxExecuteTimeout / time.Second))
		if timeout.Cmp(maxSeconds) > 0 { // whole seconds above the (floored) maximum
			return errorf("Error: timeout %ss exceeds maximum allowed (%ss).", timeout, pySeconds(e.opts.MaxExecuteTimeout))
		}
		d := time.Duration(timeout.Int64()) * time.Second
		if d == 0 {
			// "No timeout" is as long as the maximum allows: the
			// maximum is a cap, not a default.
			d = e.opts.MaxExecuteTimeout
		}
		opts = append(opts, sandbox.ExecTimeout(d))
	}
	if command == "" {
		// What the Python DockerSandbox answers, formatted by the tool.
		return executeResult("Error: Command must be a non-empty string.", 1, false)
	}
	capturing := e.opts.CaptureOutput && e.opts.evictLimit() > 0
	var capturePath, id string
	if capturing {
		ctx, id = callID(ctx)
		capturePath = e.opts.resultPath(id)
		opts = append(opts, sandbox.ExecCapture(capturePath, e.opts.MaxCaptureBytes))
	}
	resp, err := e.sb.Execute(ctx, command, opts...)
	if capturing && CaptureRefused(err) {
		// Refused before anything ran (a helper without captures, a
		// directory it cannot write): the output comes inline.
		capturing = false
		resp, err = e.sb.Execute(ctx, command, opts[:len(opts)-1]...)
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrEmptyCommand) {
			return executeResult("Error: Command must be a non-empty string.", 1, false)
		}
		return errorText("Error: " + err.Error())
	}
	if c := resp.Capture; c != nil && c.Err == nil {
		if c.Total > int64(e.opts.evictLimit()) { // deepagents' inline budget, in bytes
			return offloaded(id, capturePath, resp)
		}
		// Inline: the file goes, as the wrapper's rm does.
		_ = e.sb.Delete(ctx, capturePath)
	}
	// SafeText: no terminal escape, NUL or lone CR reaches the model (or a
	// terminal that shows the transcript); the cap applies after it.
	out, truncated := modelOutput(resp, e.opts.MaxOutputBytes)
	return executeResult(out, resp.ExitCode, truncated)
}

// CaptureRefused reports whether err is Execute's refusal of
// sandbox.ExecCapture before anything ran: a helper that predates it
// (ErrProtocolVersion), or a capture file it cannot create (an
// *fs.PathError of Op "capture"). The command can run again without it.
func CaptureRefused(err error) bool {
	var pe *fs.PathError
	return errors.Is(err, sandbox.ErrProtocolVersion) || errors.As(err, &pe) && pe.Op == "capture"
}

// executeResult is deepagents' _format_execute_output, with the exit code
// as the Result's artifact.
func executeResult(output string, code int, truncated bool) Result {
	status := "succeeded"
	if code != 0 {
		status = "failed"
	}
	out := output + "\n[Command " + status + " with exit code " + strconv.Itoa(code) + "]"
	if truncated {
		out += "\n[Output was truncated due to size limits]"
	}
	return Result{Text: out, ExitCode: &code}
}

// CapturedMessage is deepagents' answer, for the model, to a command run
// with sandbox.ExecCapture whose output was too large to give inline: the
// too-large-result message naming the tool call id and the file, then the
// status line (and the note when the capture was capped) and the file's
// head and tail. It is what execute returns with Options.CaptureOutput, for
// an adapter whose framework evicts results itself. resp.Capture must be
// set.
func CapturedMessage(id string, resp sandbox.ExecuteResponse) string {
	if resp.Capture == nil {
		return ""
	}
	return offloaded(id, resp.Capture.Path, resp).Text
}

// offloaded is CapturedMessage as execute's Result.
func offloaded(id, path string, resp sandbox.ExecuteResponse) Result {
	c := resp.Capture
	status := "succeeded"
	if resp.ExitCode != 0 {
		status = "failed"
	}
	sample := "[Command " + status + " with exit code " + strconv.Itoa(resp.ExitCode) + "]"
	if c.Capped() {
		sample += "\n" + captureCapped
	}
	head := resp.Output // the file's start: the output the sandbox kept
	if i := strings.LastIndex(head, "\n\n... Output truncated at "); resp.Truncated && i >= 0 {
		head = head[:i]
	}
	sample += "\n" + sandbox.SafeText(capturePreview(head, c.Tail, c.Lines))
	code := resp.ExitCode
	return Result{Text: tooLargeMessage(id, path, sample), ExitCode: &code}
}
