package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ExecuteResponse is the outcome of Execute.
type ExecuteResponse struct {
	// Output is stdout and stderr combined in the order they were written,
	// valid UTF-8 (invalid bytes become U+FFFD), capped at the sandbox's
	// max output bytes with a marker appended.
	Output string
	// ExitCode is the shell's exit status; 124 on timeout.
	ExitCode int
	// Truncated reports that Output was capped.
	Truncated bool
	// TimedOut reports that the timeout killed the command.
	TimedOut bool
	// OOMKilled reports that the kernel killed the command for exceeding
	// the sandbox's memory limit (ExitCode is then 137).
	OOMKilled bool
}

// An ExecOption adjusts one Execute call.
type ExecOption func(*execConfig) error

type execConfig struct {
	timeout time.Duration
	env     []string
	dir     string
	user    string
	output  io.Writer
}

// ExecTimeout overrides the sandbox's execute timeout for this call; 0
// means no timeout.
func ExecTimeout(d time.Duration) ExecOption {
	return func(c *execConfig) error {
		if d < 0 {
			return fmt.Errorf("sandbox: timeout must be non-negative, got %v", d)
		}
		c.timeout = d
		return nil
	}
}

// ExecEnv adds "KEY=value" environment variables for this call.
func ExecEnv(env ...string) ExecOption {
	return func(c *execConfig) error {
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("sandbox: env %q: want KEY=value", kv)
			}
		}
		c.env = append(c.env, env...)
		return nil
	}
}

// ExecDir runs the command in dir (relative to the working directory).
func ExecDir(dir string) ExecOption {
	return func(c *execConfig) error {
		c.dir = dir
		return nil
	}
}

// ExecUser runs the command as another user.
func ExecUser(user string) ExecOption {
	return func(c *execConfig) error {
		c.user = user
		return nil
	}
}

// ExecOutput also streams the combined output to w as the command runs,
// uncapped.
func ExecOutput(w io.Writer) ExecOption {
	return func(c *execConfig) error {
		c.output = w
		return nil
	}
}

// Execute runs command with sh -c in the working directory and returns its
// combined output and exit code. A timeout (the sandbox's default unless
// ExecTimeout says otherwise) or the end of ctx kills the command's whole
// process tree and returns promptly with the output so far: a timeout as
// exit code 124 with a "Command timed out" line, the end of ctx as ctx's
// error. Output is capped as it streams, so memory stays bounded whatever
// the command prints; the command still runs to completion.
//
// A non-zero exit status is not an error: it is in ExitCode.
func (s *DockerSandbox) Execute(ctx context.Context, command string, opts ...ExecOption) (ExecuteResponse, error) {
	cfg := execConfig{timeout: s.opts.executeTimeout}
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return ExecuteResponse{}, err
		}
	}
	capture := &capWriter{max: s.opts.maxOutputBytes}
	var w io.Writer = capture
	if cfg.output != nil {
		w = io.MultiWriter(capture, cfg.output)
	}
	c := s.Command(ctx, command)
	c.Env, c.Dir, c.User, c.Timeout = cfg.env, cfg.dir, cfg.user, cfg.timeout
	c.Stdout, c.Stderr = w, w
	c.shared = cfg.output == nil
	err := c.Run()
	resp := ExecuteResponse{Output: capture.String(), Truncated: capture.truncated()}
	if c.ProcessState != nil {
		resp.ExitCode, resp.TimedOut, resp.OOMKilled = c.ProcessState.ExitCode(), c.ProcessState.TimedOut(), c.ProcessState.OOMKilled()
	}
	var exitErr *ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return resp, err
	}
	if resp.TimedOut {
		if resp.Output != "" && !strings.HasSuffix(resp.Output, "\n") {
			resp.Output += "\n"
		}
		resp.Output += "Error: Command timed out after " + seconds(cfg.timeout) + " seconds."
	}
	return resp, nil
}

// seconds renders d as Python's str() renders a number of seconds: "120", "2.5".
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// capWriter keeps the first max bytes written to it and counts the rest.
type capWriter struct {
	buf   []byte
	max   int
	total int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capWriter) truncated() bool { return c.total > int64(c.max) }

// String returns the kept output as valid UTF-8, with the truncation
// marker when output was dropped. A character cut by the cap is dropped.
func (c *capWriter) String() string {
	b := c.buf
	if !c.truncated() {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	b = trimPartialRune(b)
	return strings.ToValidUTF8(string(b), "\uFFFD") + fmt.Sprintf("\n\n... Output truncated at %d bytes.", c.max)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
