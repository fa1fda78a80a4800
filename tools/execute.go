package tools

import (
	"context"
	"errors"
	"math/big"
	"strconv"
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
	resp, err := e.sb.Execute(ctx, command, opts...)
	if err != nil {
		if errors.Is(err, sandbox.ErrEmptyCommand) {
			return executeResult("Error: Command must be a non-empty string.", 1, false)
		}
		return errorText("Error: " + err.Error())
	}
	// SafeText: no terminal escape, NUL or lone CR reaches the model (or a
	// terminal that shows the transcript); the cap applies after it.
	out, truncated := modelOutput(resp, e.opts.MaxOutputBytes)
	return executeResult(out, resp.ExitCode, truncated)
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
