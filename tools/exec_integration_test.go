package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The session tools end to end, against real sandboxes on both test images.

// execReply is a parsed exec_command/write_stdin/kill_session answer.
type execReply struct {
	wall    float64
	running bool
	session int // when running
	code    int // when exited
	tokens  int // original token count
	output  string
}

var replyRE = regexp.MustCompile(`(?s)^Chunk ID: [0-9a-f]{6}\nWall time: ([0-9]+\.[0-9]{4}) seconds\n(?:Process running with session ID ([0-9]+)|Process exited with code (-?[0-9]+))\nOriginal token count: ([0-9]+)\nOutput:\n(.*)$`)

// parseReply parses a tool's text in Codex's format, failing t if it is not.
func parseReply(t *testing.T, res tools.Result) execReply {
	t.Helper()
	require.False(t, res.IsError, res.Text)
	m := replyRE.FindStringSubmatch(res.Text)
	require.NotNil(t, m, "not in Codex's format: %q", res.Text)
	var r execReply
	r.wall, _ = strconv.ParseFloat(m[1], 64)
	if m[2] != "" {
		r.running = true
		r.session, _ = strconv.Atoi(m[2])
	} else {
		r.code, _ = strconv.Atoi(m[3])
	}
	r.tokens, _ = strconv.Atoi(m[4])
	r.output = m[5]
	return r
}

// execAgent calls the session tools of one set.
type execAgent struct {
	t   *testing.T
	set []tools.Tool
}

func (a execAgent) call(name string, kv ...any) tools.Result {
	a.t.Helper()
	tool, ok := tools.Lookup(a.set, name)
	require.True(a.t, ok, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return tool.Call(ctx, json.RawMessage(args(kv...)))
}

func (a execAgent) reply(name string, kv ...any) execReply {
	a.t.Helper()
	return parseReply(a.t, a.call(name, kv...))
}

// until polls a session with write_stdin until its collected output
// contains want or it exits, and returns all the output and the last reply.
func (a execAgent) until(session int, want string) (string, execReply) {
	a.t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(time.Minute)
	for {
		r := a.reply("write_stdin", "session_id", session, "yield_time_ms", 5000)
		all.WriteString(r.output)
		if strings.Contains(all.String(), want) || !r.running || time.Now().After(deadline) {
			return all.String(), r
		}
	}
}

func TestExecToolsEndToEnd(t *testing.T) {
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			sb := sandboxtest.New(t, image)
			set := tools.NewExec(sb, tools.Options{})

			t.Run("a command that finishes", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				r := a.reply("exec_command", "cmd", "echo hello; echo oops >&2; exit 3")
				assert.False(t, r.running)
				assert.Equal(t, 3, r.code)
				assert.Equal(t, "hello\noops\n", r.output)
				assert.Equal(t, 3, r.tokens) // 11 bytes
				assert.Less(t, r.wall, 5.0, "returns when the command ends, not after the yield time")
			})

			t.Run("workdir, shell and environment", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				r := a.reply("exec_command", "cmd", "pwd; echo $TERM $NO_COLOR $PAGER $GIT_PAGER $GH_PAGER $LANG $LC_CTYPE $LC_ALL ${COLORTERM+set}:$COLORTERM.", "workdir", "sub/..")
				assert.Equal(t, "/workspace\ndumb 1 cat cat cat C.UTF-8 C.UTF-8 C.UTF-8 set:.\n", r.output)
				a.reply("exec_command", "cmd", "mkdir -p /tmp/w")
				assert.Equal(t, "/tmp/w\n", a.reply("exec_command", "cmd", "pwd", "workdir", "/tmp/w").output)
				r = a.reply("exec_command", "cmd", "echo $0", "shell", "sh")
				assert.Equal(t, "sh\n", r.output)
			})

			t.Run("a server keeps running past the yield time", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				start := time.Now()
				r := a.reply("exec_command", "cmd", "echo starting; while true; do echo tick; sleep 1; done", "yield_time_ms", 1500)
				took := time.Since(start)
				require.True(t, r.running, r.output)
				assert.GreaterOrEqual(t, r.session, 1000)
				assert.True(t, strings.HasPrefix(r.output, "starting\ntick\n"), r.output)
				assert.GreaterOrEqual(t, took, 1500*time.Millisecond)
				assert.Less(t, took, 15*time.Second)
				assert.InDelta(t, took.Seconds(), r.wall, 1)

				// An empty write polls: what came since, and the session
				// still runs.
				p := a.reply("write_stdin", "session_id", r.session, "chars", "", "yield_time_ms", 5000)
				require.True(t, p.running)
				assert.Equal(t, r.session, p.session)
				assert.NotContains(t, p.output, "starting")
				assert.Contains(t, p.output, "tick\n")

				list := a.call("list_sessions")
				assert.Contains(t, list.Text, fmt.Sprintf("Session ID %d: running for ", r.session))
				assert.Contains(t, list.Text, ": echo starting; while true; do echo tick; sleep 1; done")

				k := a.reply("kill_session", "session_id", r.session)
				assert.False(t, k.running)
				assert.Equal(t, 137, k.code, "128+SIGKILL")
				assert.Equal(t, "No sessions are open.", a.call("list_sessions").Text)
				res := a.call("write_stdin", "session_id", r.session, "chars", "")
				assert.True(t, res.IsError)
				assert.Equal(t, fmt.Sprintf("write_stdin failed: Unknown process id %d (list_sessions lists the open sessions; a session ends once its exit was reported)", r.session), res.Text)
			})

			t.Run("a session that exits between calls", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				// It exits once the file exists, made after the first
				// reply: still running at that reply however slow the
				// machine (a sleep of a second was not, on busy cores).
				r := a.reply("exec_command", "cmd", "while [ ! -e exit-now ]; do sleep 0.1; done; echo done; exit 7", "yield_time_ms", 250)
				require.True(t, r.running)
				assert.False(t, a.reply("exec_command", "cmd", "touch exit-now").running)
				out, last := a.until(r.session, "done")
				assert.Equal(t, "done\n", out)
				if last.running { // the exit may come with the next poll
					last = a.reply("write_stdin", "session_id", r.session)
				}
				assert.False(t, last.running)
				assert.Equal(t, 7, last.code)
				res := a.call("write_stdin", "session_id", r.session)
				assert.True(t, res.IsError, "the session is gone once its exit was reported")
				assert.Contains(t, res.Text, "Unknown process id")
			})

			t.Run("no tty: stdin is closed", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				r := a.reply("exec_command", "cmd", "cat; echo eof $?")
				assert.False(t, r.running)
				assert.Equal(t, "eof 0\n", r.output)
				r = a.reply("exec_command", "cmd", "sleep 30", "yield_time_ms", 250)
				require.True(t, r.running)
				res := a.call("write_stdin", "session_id", r.session, "chars", "hi\n")
				assert.True(t, res.IsError)
				assert.Equal(t, "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true to keep stdin open", res.Text)
				res = a.call("write_stdin", "session_id", r.session, "chars", "\u0003x")
				assert.True(t, res.IsError, "only Ctrl-C alone is an interrupt")

				// Ctrl-C alone interrupts the process group, as Codex does.
				w := a.reply("write_stdin", "session_id", r.session, "chars", "\u0003", "yield_time_ms", 10000)
				if w.running {
					_, w = a.until(w.session, "\x00never")
				}
				assert.False(t, w.running)
				assert.Equal(t, 130, w.code, "128+SIGINT")
			})

			t.Run("no tty: Ctrl-C reaches a trap", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				r := a.reply("exec_command", "cmd", "trap 'echo INT-TRAP; exit 42' INT; echo READY; while :; do sleep 1; done", "yield_time_ms", 250)
				require.True(t, r.running, r.output)
				if !strings.Contains(r.output, "READY") {
					a.until(r.session, "READY")
				}
				w := a.reply("write_stdin", "session_id", r.session, "chars", "\u0003", "yield_time_ms", 10000)
				out := w.output
				if w.running {
					var more string
					more, w = a.until(w.session, "\x00never")
					out += more
				}
				assert.False(t, w.running)
				assert.Equal(t, 42, w.code)
				assert.Contains(t, out, "INT-TRAP")
			})

			t.Run("a REPL on a tty", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				cmd, input, want := "sh", "echo $((6*7))\n", "42"
				if image == testenv.DebianImage {
					cmd, input, want = "python3 -q", "print(6*7)\n", "42"
				}
				r := a.reply("exec_command", "cmd", cmd, "tty", true, "yield_time_ms", 1000)
				require.True(t, r.running, r.output)
				w := a.reply("write_stdin", "session_id", r.session, "chars", input, "yield_time_ms", 1000)
				out := w.output
				if !strings.Contains(out, want) {
					more, _ := a.until(r.session, want)
					out += more
				}
				assert.Contains(t, out, want+"\r\n", "a tty ends lines with CRLF")
				assert.Contains(t, out, strings.TrimSuffix(input, "\n"), "the terminal echoes the input")

				// "exit" ends the REPL: the answer says it exited.
				exit := "exit\n"
				if image == testenv.DebianImage {
					exit = "exit()\n"
				}
				w = a.reply("write_stdin", "session_id", r.session, "chars", exit, "yield_time_ms", 5000)
				assert.False(t, w.running, w.output)
				assert.Equal(t, 0, w.code)
			})

			t.Run("tty: Ctrl-C interrupts", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				r := a.reply("exec_command", "cmd", "sleep 100; echo after", "tty", true, "yield_time_ms", 500)
				require.True(t, r.running)
				w := a.reply("write_stdin", "session_id", r.session, "chars", "\x03", "yield_time_ms", 5000)
				assert.False(t, w.running, "Ctrl-C ends the foreground command: %q", w.output)
				assert.Equal(t, 130, w.code, "128+SIGINT")
			})

			t.Run("the output budget", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				r := a.reply("exec_command", "cmd", "seq 1 100000", "max_output_tokens", 100)
				assert.False(t, r.running)
				assert.Equal(t, (588895+3)/4, r.tokens) // seq 1 100000 prints 588895 bytes
				assert.True(t, strings.HasPrefix(r.output, "Total output lines: 100000\n\n1\n2\n3\n"), r.output)
				assert.True(t, strings.HasSuffix(r.output, "99999\n100000\n"), r.output)
				assert.Regexp(t, `…[0-9]+ tokens truncated…`, r.output)
				assert.Less(t, len(r.output), 100*4+100)

				// A flood larger than the process's log: bounded, and said.
				r = a.reply("exec_command", "cmd", "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo end", "max_output_tokens", 50)
				assert.False(t, r.running)
				assert.Equal(t, 0, r.code)
				assert.True(t, strings.HasSuffix(r.output, "xx\nend\n"), r.output)
				assert.Less(t, len(r.output), 50*4+100)
				assert.Equal(t, (20000005+3)/4, r.tokens, "every byte counted, those the log dropped too")

				// Escape sequences never reach the model.
				r = a.reply("exec_command", "cmd", `printf '\033[31mred\033[0m\n'`)
				assert.Equal(t, "␛[31mred␛[0m\n", r.output)
			})

			t.Run("bad arguments", func(t *testing.T) {
				a := execAgent{t: t, set: set}
				for _, tc := range []struct {
					tool string
					kv   []any
					want string
				}{
					{"exec_command", nil, `Error: invalid arguments for exec_command: missing required argument "cmd"`},
					{"exec_command", []any{"cmd", " "}, `Error: invalid arguments for exec_command: "cmd" must be a non-empty shell command`},
					{"exec_command", []any{"cmd", "true", "yield_time_ms", -1}, `Error: invalid arguments for exec_command: "yield_time_ms" must be non-negative, got -1`},
					{"exec_command", []any{"cmd", "true", "yield_time_ms", "5"}, `Error: invalid arguments for exec_command: "yield_time_ms" must be an integer, got a string`},
					{"exec_command", []any{"cmd", "true", "max_output_tokens", -5}, `Error: invalid arguments for exec_command: "max_output_tokens" must be non-negative, got -5`},
					{"exec_command", []any{"cmd", "true", "tty", "yes"}, `Error: invalid arguments for exec_command: "tty" must be a boolean (true or false), got a string`},
					{"exec_command", []any{"cmd", "true", "login", true}, `Error: invalid arguments for exec_command: unknown argument "login"`},
					{"exec_command", []any{"cmd", "true", "shell", ""}, `Error: invalid arguments for exec_command: "shell" must name a shell, such as bash, or be left out`},
					{"write_stdin", nil, `Error: invalid arguments for write_stdin: missing required argument "session_id"`},
					{"write_stdin", []any{"session_id", "1000"}, `Error: invalid arguments for write_stdin: "session_id" must be an integer, got a string`},
					{"write_stdin", []any{"session_id", 1e30}, `Error: invalid arguments for write_stdin: "session_id" is out of range: 1000000000000000000000000000000`},
					{"write_stdin", []any{"session_id", 4242}, `write_stdin failed: Unknown process id 4242 (list_sessions lists the open sessions; a session ends once its exit was reported)`},
					{"kill_session", []any{"session_id", 4242}, `kill_session failed: Unknown process id 4242 (list_sessions lists the open sessions)`},
					{"list_sessions", []any{"all", true}, `Error: invalid arguments for list_sessions: unknown argument "all"`},
				} {
					res := a.call(tc.tool, tc.kv...)
					assert.True(t, res.IsError, "%s %v: %s", tc.tool, tc.kv, res.Text)
					assert.Equal(t, tc.want, res.Text, "%s %v", tc.tool, tc.kv)
				}
				res := a.call("exec_command", "cmd", "true", "workdir", "/nonexistent")
				assert.True(t, res.IsError, res.Text)
				assert.True(t, strings.HasPrefix(res.Text, "exec_command failed for `true`: "), res.Text)
			})
		})
	}
}

// Many sessions at once, from concurrent calls; the cap refuses one more
// with a clear message, and killing one makes room.
func TestExecToolsManySessions(t *testing.T) {
	sb := sandboxtest.Busybox(t)
	const n = 40
	a := execAgent{t: t, set: tools.NewExec(sb, tools.Options{MaxSessions: n})}
	ids := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := a.reply("exec_command", "cmd", fmt.Sprintf("echo s%d; sleep 600", i), "yield_time_ms", 250)
			assert.True(t, r.running)
			ids[i] = r.session
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "session IDs are unique")
		seen[id] = true
	}
	res := a.call("exec_command", "cmd", "true")
	assert.True(t, res.IsError)
	assert.Equal(t, fmt.Sprintf("exec_command failed: %d sessions are open, the most this tool set keeps; end one with kill_session (list_sessions lists them) and try again", n), res.Text)
	list := a.call("list_sessions").Text
	assert.Len(t, strings.Split(list, "\n"), n)

	k := a.reply("kill_session", "session_id", ids[0])
	assert.Equal(t, 137, k.code)
	r := a.reply("exec_command", "cmd", "echo room")
	assert.Equal(t, "room\n", r.output)

	for i, id := range ids[1:] {
		_ = i
		wg.Go(func() { a.reply("kill_session", "session_id", id) })
	}
	wg.Wait()
	assert.Equal(t, "No sessions are open.", a.call("list_sessions").Text)
	procs, err := sb.Processes(sandboxtest.Context(t))
	require.NoError(t, err)
	for _, p := range procs {
		assert.False(t, p.Running(), "%s %s still runs", p.ID, p.Command)
	}
}

// kill_session kills what the command started too, however it detached.
func TestExecToolsKillTree(t *testing.T) {
	sb := sandboxtest.Busybox(t)
	a := execAgent{t: t, set: tools.NewExec(sb, tools.Options{})}
	r := a.reply("exec_command", "cmd", "sleep 701 & setsid sleep 702 & (sleep 703 &); echo started; wait", "yield_time_ms", 1000)
	require.True(t, r.running, r.output)
	count := func() string {
		out, err := sb.Execute(sandboxtest.Context(t), "ps -o args | grep -c '^sleep 70[123]$' || true")
		require.NoError(t, err)
		return strings.TrimSpace(out.Output)
	}
	require.Equal(t, "3", count())
	k := a.reply("kill_session", "session_id", r.session)
	assert.Equal(t, 137, k.code)
	assert.Equal(t, "0", count(), "no process of the session is left")
}

var _ = sandbox.ErrProcessDone

// A session that does not read its terminal does not hang write_stdin: the
// write gives up after a while with a message, and the session goes on.
func TestExecToolsWriteBlocked(t *testing.T) {
	sb := sandboxtest.Busybox(t)
	a := execAgent{t: t, set: tools.NewExec(sb, tools.Options{})}
	r := a.reply("exec_command", "cmd", "stty raw -echo; sleep 600", "tty", true, "yield_time_ms", 500)
	require.True(t, r.running)
	start := time.Now()
	res := a.call("write_stdin", "session_id", r.session, "chars", strings.Repeat("x", 4<<20))
	assert.Less(t, time.Since(start), time.Minute)
	require.True(t, res.IsError, "%.300s", res.Text)
	assert.Equal(t, fmt.Sprintf("write_stdin failed: session ID %d did not take the input within 10s: it is not reading its terminal; poll it with empty chars, or kill_session it", r.session), res.Text)
	k := a.reply("kill_session", "session_id", r.session)
	assert.Equal(t, 137, k.code)
	assert.Less(t, len(k.output), 512000+200, "the echo of the input is bounded too")
}
