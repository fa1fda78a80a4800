package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
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
	// Capture describes the file ExecCapture kept; nil without it.
	Capture *Capture
}

// DefaultCaptureBytes is ExecCapture's cap when it is given 0: 10 MiB,
// deepagents' capture limit.
const DefaultCaptureBytes = 10 << 20

// CaptureTailBytes is the most Capture.Tail holds.
const CaptureTailBytes = proto.MaxCaptureTail

// Capture describes the file in the sandbox that ExecCapture wrote the
// command's output to.
type Capture struct {
	Path  string // the file, in the sandbox
	Size  int64  // bytes in the file
	Total int64  // bytes the command wrote: above Size when the cap cut the file
	Lines int64  // newlines in the file
	Tail  []byte // the file's last bytes, at most CaptureTailBytes
	// Err says why the file holds less than min(Total, cap), as an
	// *fs.PathError (a full disk, say); nil when it is whole.
	Err error
}

// Capped reports whether the cap cut the file short of the whole output.
func (c *Capture) Capped() bool { return c.Total > c.Size && c.Err == nil }

// An ExecOption adjusts one Execute call.
type ExecOption func(*execConfig) error

type execConfig struct {
	timeout time.Duration
	env     []string
	dir     string
	user    string
	output  io.Writer
	capture *proto.Capture
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

// ExecUser runs the command as another user: a name, a uid, "uid:gid" or
// "name:group", as the image's user is given. A name the sandbox's
// /etc/passwd (or a group its /etc/group) does not have is ErrUnknownUser,
// naming it, and nothing runs; the sandbox stays usable.
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

// ExecCapture also writes the command's combined output, as it streams,
// to the file path in the sandbox (absolute; created or truncated, its
// directory made, as the command's user), up to max bytes (0:
// DefaultCaptureBytes). The file holds the whole output where the
// response's Output is capped; ExecuteResponse.Capture says what it holds.
// A file the helper cannot create fails the call before the command runs,
// with an *fs.PathError whose Op is "capture" (run it again without
// ExecCapture). A sandbox whose helper predates it is ErrProtocolVersion.
func ExecCapture(path string, max int64) ExecOption {
	return func(c *execConfig) error {
		if !strings.HasPrefix(path, "/") || max < 0 {
			return fmt.Errorf("%w: ExecCapture(%q, %d): want an absolute path and a non-negative size", ErrInvalidOption, path, max)
		}
		if max == 0 {
			max = DefaultCaptureBytes
		}
		c.capture = &proto.Capture{Path: fsops.RawString(path), Max: max}
		return nil
	}
}

// captureRefused makes the helper's refusal of a capture file it cannot
// create (nothing ran) an *fs.PathError of Op "capture"; other errors pass.
func captureRefused(err error, path string) error {
	var ce *commandError
	if !errors.As(err, &ce) {
		return err
	}
	why, ok := strings.CutPrefix(ce.err.Error(), "capture to "+path+": ")
	if !ok {
		return err
	}
	e := proto.Error{Code: proto.Code(ce.err), Message: SafeText(why)}
	return &fs.PathError{Op: "capture", Path: path, Err: e.Err()}
}

// Execute runs command with sh -c in the working directory and returns its
// combined output and exit code. The command may be up to MaxCommandBytes
// long (16 MiB; a heredoc of a large file included); a longer one is
// ErrCommandTooLong. A timeout (the sandbox's default unless
// ExecTimeout says otherwise) or the end of ctx kills the command's whole
// process tree and returns promptly with the output so far: a timeout as
// exit code 124 with a "Command timed out" line, the end of ctx as ctx's
// error. Output is capped as it streams, so memory stays bounded whatever
// the command prints; the command still runs to completion.
//
// A non-zero exit status is not an error: it is in ExitCode.
func (s *Sandbox) Execute(ctx context.Context, command string, opts ...ExecOption) (resp ExecuteResponse, err error) {
	ctx, op := s.begin(ctx, "Execute")
	defer func() {
		if err == nil {
			op.exit(resp.ExitCode)
			op.bytes(int64(len(resp.Output)))
		}
		op.end(&err)
	}()
	op.command(command)
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
	c.observed = true // as Execute
	c.Env, c.Dir, c.User, c.Timeout = cfg.env, cfg.dir, cfg.user, cfg.timeout
	c.Stdout, c.Stderr = w, w
	c.shared = cfg.output == nil
	c.capture = cfg.capture
	err = c.Run()
	if cfg.capture != nil {
		err = captureRefused(err, string(cfg.capture.Path))
	}
	resp = ExecuteResponse{Output: capture.String(), Truncated: capture.truncated()}
	if cfg.capture != nil && c.captured != nil {
		k := c.captured
		if k.Size < 0 || k.Size > cfg.capture.Max || k.Total < k.Size || k.Lines < 0 || k.Lines > k.Size ||
			len(k.Tail) > proto.MaxCaptureTail || int64(len(k.Tail)) > k.Size || len(k.Error) > 4096 {
			return resp, fmt.Errorf("%w: a capture of %d bytes (%d written, %d lines, a tail of %d) in a file capped at %d",
				errHelperLied, k.Size, k.Total, k.Lines, len(k.Tail), cfg.capture.Max)
		}
		resp.Capture = &Capture{Path: string(cfg.capture.Path), Size: k.Size, Total: k.Total, Lines: k.Lines, Tail: k.Tail}
		if k.Error != "" {
			resp.Capture.Err = &fs.PathError{Op: "capture", Path: string(cfg.capture.Path), Err: errors.New(SafeText(string(k.Error)))}
		}
	}
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

// MaxCommandBytes is the longest command that Execute, Command and
// StartProcess take: a longer one is ErrCommandTooLong, before anything
// runs. A command over 64 KiB does not go to the shell as its argument,
// which Linux caps at 128 KiB, but as a file it reads (its processes do not
// inherit it): $0, $@, stdin, the exit status and the timeout are as with
// sh -c, and only the shell's own error messages (a syntax error, a
// command not found) name the file /dev/fd/3. The limit keeps the request
// that carries the command (base64 on the wire when long) well within the
// protocol's 64 MiB frame, and the helper's memory to a few times the
// command.
const MaxCommandBytes = 16 << 20

// checkCommand refuses an empty command and one over MaxCommandBytes.
func checkCommand(command string) error {
	switch {
	case command == "":
		return ErrEmptyCommand
	case len(command) > MaxCommandBytes:
		return fmt.Errorf("%w: %d bytes, over the limit of %d (16 MiB; see MaxCommandBytes)", ErrCommandTooLong, len(command), MaxCommandBytes)
	}
	return nil
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

// unknownUser returns ErrUnknownUser, naming user, when an exec as user
// failed and the sandbox's /etc/passwd (or /etc/group) has no such user
// (or group); else nil. An engine's own refusal of other users
// (errors.ErrUnsupported) stands.
func (s *Sandbox) unknownUser(ctx context.Context, user string, err error) error {
	if errors.Is(err, errors.ErrUnsupported) || ctx.Err() != nil || s.closed.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	cp := func(ctx context.Context, path string) (io.ReadCloser, error) { return s.eng.CopyFrom(ctx, s.id, path) }
	_, _, rerr := docker.ResolveUser(ctx, cp, user)
	if !errors.Is(rerr, docker.ErrNoEntry) {
		return nil
	}
	if !strings.Contains(user, ":") {
		rerr = errors.Unwrap(rerr) // not "user %q" again
	}
	return fmt.Errorf("%w %q: %w", ErrUnknownUser, user, rerr)
}

// SafeText makes text that came out of a sandbox (command output, file
// content, grep lines) safe to show to a model and to print on a terminal:
// nothing in the result can move a terminal's cursor, change its colours or
// title, ring its bell, clear its screen or hide text, and every byte the
// sandbox produced stays visible as something.
//
//   - "\n" and "\t" are kept, and so is "\r" right before "\n" (a CRLF line
//     end); a lone "\r", which would let later text overwrite earlier text
//     on a terminal, becomes U+240D (␍).
//   - The other C0 control characters U+0000–U+001F, NUL and ESC included,
//     become their Unicode Control Pictures U+2400–U+241F (␀ … ␛ …), and
//     DEL (U+007F) becomes U+2421 (␡): one visible character for one.
//   - The C1 control characters U+0080–U+009F (among them CSI, U+009B,
//     which some terminals take for ESC [) become the six ASCII characters
//     `\u0080` … `\u009f`: they have no pictures.
//   - Invalid UTF-8 becomes U+FFFD (�), so the result is valid UTF-8.
//
// Everything else, other Unicode format characters included, is kept.
// Text that needs no change is returned as is, without copying.
//
// The library does not apply SafeText itself (Execute's output and Read's
// content are the bytes the sandbox produced, as valid UTF-8); package
// tools applies it to the text it gives the model.
func SafeText(s string) string {
	if !needsSafeText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteByte(byte(r))
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				b.WriteByte('\r')
			} else {
				b.WriteRune('\u240D')
			}
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('\u2421')
		case r >= 0x80 && r <= 0x9f:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsSafeText reports whether SafeText would change s.
func needsSafeText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r':
			if i+1 == len(s) || s[i+1] != '\n' {
				return true
			}
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f: // U+0080–U+009F
			return true
		}
	}
	return !utf8.ValidString(s)
}
