package tools

import (
	"context"
	"errors"
	"math/big"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox"
)

// ProcessSandbox is what the session tools (NewExec) use;
// *sandbox.Sandbox implements it.
type ProcessSandbox interface {
	WorkingDir() string
	StartProcess(ctx context.Context, command string, opts ...sandbox.ProcessOption) (*sandbox.Process, error)
	Processes(ctx context.Context) ([]sandbox.ProcessInfo, error)
}

var _ ProcessSandbox = (*sandbox.Sandbox)(nil)

// Defaults of the session tools' options and arguments, Codex's (codex-rs
// core/src/unified_exec).
const (
	// DefaultMaxSessions is the default of Options.MaxSessions: Codex's
	// MAX_UNIFIED_EXEC_PROCESSES.
	DefaultMaxSessions = 64
	// DefaultMaxPollTime is the default of Options.MaxPollTime: Codex's
	// DEFAULT_MAX_BACKGROUND_TERMINAL_TIMEOUT_MS.
	DefaultMaxPollTime = 300 * time.Second

	defaultExecYield      = 10 * time.Second // exec_command
	defaultWriteYield     = 250 * time.Millisecond
	minYield              = 250 * time.Millisecond
	maxYield              = 30 * time.Second
	minPollYield          = 5 * time.Second // write_stdin with empty chars
	defaultMaxOutputToken = 10000
)

// execEnv lists the variables every session's process gets, as Codex's
// unified exec sets them (UNIFIED_EXEC_ENV): no colours, no pager, a
// terminal that asks for no escape sequences, a UTF-8 locale. Codex's
// CODEX_CI and its thread variables are left out: they name Codex.
var execEnv = []string{
	"NO_COLOR=1", "TERM=dumb",
	"LANG=C.UTF-8", "LC_CTYPE=C.UTF-8", "LC_ALL=C.UTF-8",
	"COLORTERM=",
	"PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat",
}

// ctrlC is write_stdin's chars for an interrupt: on a session without a
// terminal it sends SIGINT to the session's process group, as Codex does.
const ctrlC = "\u0003"

// ttySize is the terminal of a tty session.
const ttyRows, ttyCols = 24, 80

// NewExec returns the session tools bound to sb, in the shape of OpenAI
// Codex's unified exec: exec_command and write_stdin, then list_sessions
// and kill_session. They are not among New's tools: an agent gets them by
// asking. The tools of one call to NewExec share a table of sessions: a
// session ID from exec_command is known to the write_stdin and
// kill_session of the same set only. The processes belong to the sandbox:
// they outlive the tool set, and the sandbox's Close ends them.
//
// Where they differ from Codex: a command runs with sh -c (or the shell
// argument) in the sandbox, as the sandbox's user; session IDs count up
// from 1000 rather than being random; a tool set refuses a session beyond
// Options.MaxSessions (64) instead of killing the least recently used one;
// output is escaped as sandbox.SafeText escapes it (no terminal escape
// sequence reaches the model) before the budget applies; max_output_tokens
// is capped at Options.MaxOutputBytes/4; yield_time_ms and
// max_output_tokens are integers (Codex's schema says number).
func NewExec(sb ProcessSandbox, opts Options) []Tool {
	x := &execTools{sb: sb, opts: opts.withDefaults(), wd: "/"}
	if sb != nil && sb.WorkingDir() != "" {
		x.wd = sb.WorkingDir()
	}
	x.table = newSessions(x.opts.MaxSessions)
	e := &env{opts: x.opts, wd: x.wd}
	poll := strconv.FormatInt(x.opts.MaxPollTime.Milliseconds(), 10)
	defs := []struct {
		name, description, schema string
		run                       func(*execTools, context.Context, *args) Result
	}{
		{"exec_command", execCommandDescription, execCommandSchema, (*execTools).execCommand},
		{"write_stdin", writeStdinDescription, writeStdinSchema, (*execTools).writeStdin},
		{"list_sessions", listSessionsDescription, listSessionsSchema, (*execTools).listSessions},
		{"kill_session", killSessionDescription, killSessionSchema, (*execTools).killSession},
	}
	out := make([]Tool, len(defs))
	for i, d := range defs {
		run, name := d.run, d.name
		out[i] = Tool{
			Name:        d.name,
			Description: e.fill(strings.ReplaceAll(d.description, "{max_poll}", poll)),
			InputSchema: e.schema(d.schema),
			run: func(ctx context.Context, a *args) Result {
				if x.sb == nil {
					return errorText("Error: no sandbox is attached to this tool")
				}
				ctx, id := callID(ctx)
				return evict(ctx, x.sb, x.opts, name, id, run(x, ctx, a))
			},
		}
	}
	return out
}

// execTools is what the session tools of one set share.
type execTools struct {
	sb    ProcessSandbox
	opts  Options
	wd    string
	table *sessions
}

// budget returns the output budget in bytes for a max_output_tokens
// argument (nil: the default), capped by Options.MaxOutputBytes.
func (x *execTools) budget(tokens *big.Int) int {
	limit := x.opts.MaxOutputBytes
	if tokens == nil {
		return min(defaultMaxOutputToken*bytesPerToken, limit)
	}
	if !tokens.IsInt64() || tokens.Int64() > int64(limit/bytesPerToken) {
		return limit
	}
	return int(tokens.Int64()) * bytesPerToken
}

// yieldArg reads yield_time_ms and clamps it, as Codex does, to
// [lo, hi]; def when not given.
func yieldArg(a *args, def, lo, hi time.Duration) (time.Duration, *big.Int) {
	n, ok := a.bigInt("yield_time_ms")
	if !ok {
		return min(max(def, lo), hi), nil
	}
	if n.Sign() < 0 {
		return 0, n
	}
	d := hi
	if n.IsInt64() && n.Int64() < hi.Milliseconds() {
		d = time.Duration(n.Int64()) * time.Millisecond
	}
	return min(max(d, lo), hi), nil
}

// tokensArg reads max_output_tokens; a negative value is returned as bad.
func tokensArg(a *args) (tokens, bad *big.Int) {
	n, ok := a.bigInt("max_output_tokens")
	if !ok {
		return nil, nil
	}
	if n.Sign() < 0 {
		return nil, n
	}
	return n, nil
}

// sessionArg reads the required session_id.
func sessionArg(a *args) (int, bool) {
	if _, ok := a.get("session_id", true); !ok {
		return 0, false
	}
	return a.integer("session_id")
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (x *execTools) execCommand(ctx context.Context, a *args) Result {
	cmd, _ := a.str("cmd", true)
	workdir, _ := a.str("workdir", false)
	shell, hasShell := a.str("shell", false)
	tty, _ := a.boolean("tty")
	yield, badYield := yieldArg(a, defaultExecYield, minYield, maxYield)
	tokens, badTokens := tokensArg(a)
	if r, bad := a.done(); bad {
		return r
	}
	switch {
	case badYield != nil:
		return errorf("Error: invalid arguments for exec_command: \"yield_time_ms\" must be non-negative, got %s", badYield)
	case badTokens != nil:
		return errorf("Error: invalid arguments for exec_command: \"max_output_tokens\" must be non-negative, got %s", badTokens)
	case strings.TrimSpace(cmd) == "":
		return errorText("Error: invalid arguments for exec_command: \"cmd\" must be a non-empty shell command")
	case hasShell && strings.TrimSpace(shell) == "":
		return errorText("Error: invalid arguments for exec_command: \"shell\" must name a shell, such as bash, or be left out")
	}
	command := cmd
	if hasShell {
		command = "exec " + shellQuote(shell) + " -c " + shellQuote(cmd)
	}
	dir := x.wd
	switch {
	case path.IsAbs(workdir):
		dir = path.Clean(workdir)
	case workdir != "":
		dir = path.Join(x.wd, workdir)
	}
	start := time.Now()
	id, ok := x.table.reserve()
	if !ok {
		return errorf("exec_command failed: %d sessions are open, the most this tool set keeps; end one with kill_session (list_sessions lists them) and try again", x.opts.MaxSessions)
	}
	opts := []sandbox.ProcessOption{sandbox.ProcessDir(dir), sandbox.ProcessEnv(execEnv...)}
	if tty {
		opts = append(opts, sandbox.ProcessTTY(ttyRows, ttyCols))
	}
	p, err := x.sb.StartProcess(ctx, command, opts...)
	if err != nil {
		x.table.release(id)
		return errorf("exec_command failed for `%s`: %s", oneLine(sandbox.SafeText(cmd), 200), sandbox.SafeText(err.Error()))
	}
	s := &session{id: id, proc: processAdapter{p}, procID: p.ID(), command: cmd, tty: tty, started: start}
	if !tty {
		// As in Codex, a command without a tty has no input: it reads end
		// of file rather than waiting for input no one sends.
		if err := p.CloseStdin(ctx); err != nil && !errors.Is(err, sandbox.ErrProcessDone) {
			_ = p.Kill(context.WithoutCancel(ctx))
			x.table.release(id)
			return errorf("exec_command failed for `%s`: %s", oneLine(sandbox.SafeText(cmd), 200), sandbox.SafeText(err.Error()))
		}
	}
	x.table.put(s)
	// The yield time runs from the process's start, as in Codex; the wall
	// time from the call's.
	return x.report(ctx, "exec_command", s, start, time.Now().Add(yield), x.budget(tokens))
}

// report collects a session's output until the deadline and formats it;
// a session whose process exited is forgotten once reported.
func (x *execTools) report(ctx context.Context, tool string, s *session, start, deadline time.Time, budget int) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, err := s.collect(ctx, deadline, newHeadTail(budget), maxDrainReads)
	rep.wall = time.Since(start).Seconds()
	if err != nil {
		if errors.Is(err, sandbox.ErrProcessNotFound) {
			x.table.release(s.id)
			return errorf("%s failed: the process of session ID %d is gone (the sandbox forgot it or restarted)", tool, s.id)
		}
		return errorf("%s failed: %s; the process may still run as session ID %d", tool, sandbox.SafeText(err.Error()), s.id)
	}
	if !rep.running {
		x.table.release(s.id)
	}
	return text(rep.String())
}

// maxDrainReads bounds the reads after the deadline: the output log holds
// at most MaxLogSize bytes, read MaxProcessRead at a time, and a process
// that goes on printing does not keep the call going.
const maxDrainReads = 4

func (x *execTools) writeStdin(ctx context.Context, a *args) Result {
	sid, hasID := sessionArg(a)
	chars, _ := a.str("chars", false)
	var yield time.Duration
	var badYield *big.Int
	if chars == "" {
		yield, badYield = yieldArg(a, defaultWriteYield, minPollYield, x.opts.MaxPollTime)
	} else {
		yield, badYield = yieldArg(a, defaultWriteYield, minYield, maxYield)
	}
	tokens, badTokens := tokensArg(a)
	if r, bad := a.done(); bad {
		return r
	}
	switch {
	case badYield != nil:
		return errorf("Error: invalid arguments for write_stdin: \"yield_time_ms\" must be non-negative, got %s", badYield)
	case badTokens != nil:
		return errorf("Error: invalid arguments for write_stdin: \"max_output_tokens\" must be non-negative, got %s", badTokens)
	}
	start := time.Now()
	s := x.table.get(sid)
	if !hasID || s == nil {
		return errorf("write_stdin failed: Unknown process id %d (list_sessions lists the open sessions; a session ends once its exit was reported)", sid)
	}
	if chars == ctrlC && !s.tty {
		err := s.proc.interrupt(ctx)
		switch {
		case err == nil, errors.Is(err, sandbox.ErrProcessDone):
		case errors.Is(err, sandbox.ErrProcessNotFound):
			x.table.release(s.id)
			fallthrough
		default:
			return errorf("write_stdin failed: %s", sandbox.SafeText(err.Error()))
		}
	} else if chars != "" {
		if !s.tty {
			return errorText("write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open")
		}
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := s.proc.write(wctx, []byte(chars))
		cancel()
		switch {
		case err == nil, errors.Is(err, sandbox.ErrProcessDone):
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			return errorf("write_stdin failed: session ID %d did not take the input within %v: it is not reading its terminal; poll it with empty chars, or kill_session it", s.id, writeTimeout)
		case errors.Is(err, sandbox.ErrProcessNotFound):
			x.table.release(s.id)
			fallthrough
		default:
			return errorf("write_stdin failed: %s", sandbox.SafeText(err.Error()))
		}
	}
	return x.report(ctx, "write_stdin", s, start, start.Add(yield), x.budget(tokens))
}

func (x *execTools) killSession(ctx context.Context, a *args) Result {
	sid, hasID := sessionArg(a)
	if r, bad := a.done(); bad {
		return r
	}
	start := time.Now()
	s := x.table.get(sid)
	if !hasID || s == nil {
		return errorf("kill_session failed: Unknown process id %d (list_sessions lists the open sessions)", sid)
	}
	if err := s.proc.kill(ctx); err != nil && !errors.Is(err, sandbox.ErrProcessDone) {
		if errors.Is(err, sandbox.ErrProcessNotFound) {
			x.table.release(s.id)
		}
		return errorf("kill_session failed: %s", sandbox.SafeText(err.Error()))
	}
	// The process is dead: its output ends as soon as the log has it all.
	return x.report(ctx, "kill_session", s, start, time.Now().Add(killDrain), x.opts.MaxOutputBytes)
}

// writeTimeout bounds how long write_stdin waits for a process to take
// its input (a terminal's buffer is a few KiB).
const writeTimeout = 10 * time.Second

// killDrain bounds the wait for a killed process's output to end.
const killDrain = 5 * time.Second

func (x *execTools) listSessions(ctx context.Context, a *args) Result {
	if r, bad := a.done(); bad {
		return r
	}
	list := x.table.list()
	if len(list) == 0 {
		return text("No sessions are open.")
	}
	// Ask the sandbox for the states: a process may have exited since the
	// last call that read its output.
	if infos, err := x.sb.Processes(ctx); err == nil {
		byID := make(map[string]sandbox.ProcessInfo, len(infos))
		for _, info := range infos {
			byID[info.ID] = info
		}
		for _, s := range list {
			if info, ok := byID[s.procID]; ok && !info.Running() {
				s.setEndedAt(info.ExitCode, info.Ended)
			}
		}
	}
	now := time.Now()
	lines := make([]string, len(list))
	for i, s := range list {
		lines[i] = s.describe(now)
	}
	return text(strings.Join(lines, "\n"))
}

// processAdapter is a *sandbox.Process as the session tools use it.
type processAdapter struct{ p *sandbox.Process }

func (a processAdapter) read(ctx context.Context, cursor int64, wait time.Duration) (procChunk, error) {
	out, err := a.p.Read(ctx, cursor, sandbox.OutputWait(wait))
	if err != nil {
		return procChunk{}, err
	}
	return procChunk{data: out.Data, next: out.Next, dropped: out.Dropped, done: out.Done, code: out.Info.ExitCode}, nil
}

func (a processAdapter) wait(ctx context.Context, d time.Duration) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := a.p.Wait(wctx)
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return false, nil
	}
	return false, err
}

func (a processAdapter) write(ctx context.Context, b []byte) error {
	_, err := a.p.Write(ctx, b)
	return err
}

func (a processAdapter) kill(ctx context.Context) error { return a.p.Kill(ctx) }

func (a processAdapter) interrupt(ctx context.Context) error {
	return a.p.Signal(ctx, syscall.SIGINT)
}
