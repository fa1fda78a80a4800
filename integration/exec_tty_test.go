package integration

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ttyScreen is what a command's terminal shows, written by the call and
// read by the test.
type ttyScreen struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newTTYScreen() *ttyScreen { return &ttyScreen{changed: make(chan struct{})} }

func (s *ttyScreen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

func (s *ttyScreen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// until waits for want to show after offset from, and returns the offset
// past it; the test fails after 30 s.
func (s *ttyScreen) until(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		text, changed := s.buf.String(), s.changed
		s.mu.Unlock()
		if i := strings.Index(text[from:], want); i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%q did not show within 30 s; the terminal shows %q", want, text)
		}
	}
}

// startTTY starts command on a terminal of 30x90 and returns what it shows
// and a way to type.
func startTTY(t *testing.T, sb *sandbox.Sandbox, ctx context.Context, command string) (*sandbox.Cmd, *ttyScreen, func(string)) {
	t.Helper()
	cmd := sb.Command(ctx, command)
	cmd.TTY = &sandbox.Winsize{Rows: 30, Cols: 90}
	screen := newTTYScreen()
	cmd.Stdout = screen
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = in.Close() })
	return cmd, screen, func(s string) {
		_, err := io.WriteString(in, s)
		require.NoError(t, err)
	}
}

// exitStatus is the status Wait's error carries (0 for nil).
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *sandbox.ExitError
	require.ErrorAs(t, err, &ee)
	return ee.ExitCode()
}

// A shell on a terminal (sh on both images): it sees the size asked and
// a resize, Ctrl-C interrupts the command it runs, and its exit status
// comes back.
func TestTTYShell(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		cmd, screen, typ := startTTY(t, sb, ctx, "PS1='$ ' exec sh")
		typ("stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-$((1+1))-ttys\r")
		at := screen.until(t, 0, "30 90")
		at = screen.until(t, at, "all-2-ttys")
		require.NoError(t, cmd.Resize(ctx, 41, 123))
		typ("stty size\r")
		at = screen.until(t, at, "41 123")

		start := time.Now()
		typ("sleep 30; echo not-$((1+1))-interrupted\r")
		time.Sleep(500 * time.Millisecond) // the shell reads the line, sleep starts
		typ("\x03")
		typ("echo after-$((6*7))\r")
		screen.until(t, at, "after-42")
		assert.Less(t, time.Since(start), 20*time.Second, "Ctrl-C did not interrupt sleep")
		assert.NotContains(t, screen.String(), "not-2-interrupted")
		typ("exit 7\r")
		assert.Equal(t, 7, exitStatus(t, cmd.Wait()))
		assert.ErrorIs(t, cmd.Resize(ctx, 10, 10), sandbox.ErrProcessDone)
	})
}

// Python's REPL on a terminal (Debian): it sees the size and a resize,
// Ctrl-C raises KeyboardInterrupt in the statement it runs and the REPL
// goes on, SystemExit's code is the exit status.
func TestTTYPythonREPL(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, debianImage())
	ctx := testCtx(t)
	cmd, screen, typ := startTTY(t, sb, ctx, "exec python3 -q")
	at := screen.until(t, 0, ">>> ")
	typ("import os, time; os.get_terminal_size()\r")
	at = screen.until(t, at, "os.terminal_size(columns=90, lines=30)")
	// Resize at the prompt. A resize that reaches the REPL between a
	// statement's output and its next prompt can be undone inside the
	// container: under gVisor, where that window is wide, the helper's
	// TIOCSWINSZ succeeded and the terminal then had the old size again;
	// python3 reading stdin without its line editor never showed it.
	at = screen.until(t, at, ">>> ")
	require.NoError(t, cmd.Resize(ctx, 50, 132))
	typ("os.get_terminal_size()\r")
	at = screen.until(t, at, "os.terminal_size(columns=132, lines=50)")
	start := time.Now()
	typ("time.sleep(30)\r")
	time.Sleep(500 * time.Millisecond)
	typ("\x03")
	at = screen.until(t, at, "KeyboardInterrupt")
	assert.Less(t, time.Since(start), 20*time.Second, "Ctrl-C did not interrupt the sleep")
	typ("print(6*7)\r")
	at = screen.until(t, at, "42")
	typ("raise SystemExit(3)\r")
	assert.Equal(t, 3, exitStatus(t, cmd.Wait()))
	_ = at
}

// debianImage is the Debian test image.
func debianImage() string { return images[1] }

// A command on a terminal keeps the guarantees of Execute: its timeout
// kills its whole tree, its context too; a bad size is refused before
// anything runs; Resize without a terminal is ErrNoTerminal.
func TestTTYTimeoutAndErrors(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, images[0])
	ctx := testCtx(t)

	cmd := sb.Command(ctx, "sleep 300 & sleep 300")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	cmd.Timeout = time.Second
	start := time.Now()
	err := cmd.Run()
	require.Error(t, err)
	assert.True(t, cmd.ProcessState.TimedOut(), "timed out: %v", err)
	assert.Less(t, time.Since(start), 20*time.Second)

	cctx, cancel := context.WithCancel(ctx)
	cmd = sb.Command(cctx, "sleep 301 & sleep 301")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	require.NoError(t, cmd.Start())
	time.Sleep(300 * time.Millisecond)
	cancel()
	assert.ErrorIs(t, cmd.Wait(), context.Canceled)
	assert.Eventually(t, func() bool {
		return !strings.Contains(mustSh(t, sb, "ps -o args 2>/dev/null || ps"), "sleep 30")
	}, 10*time.Second, 200*time.Millisecond, "the commands' trees are gone")

	for _, size := range []sandbox.Winsize{{Rows: 0, Cols: 80}, {Rows: 24, Cols: 0}, {Rows: -1, Cols: 80}, {Rows: 24, Cols: 70000}} {
		cmd = sb.Command(ctx, "true")
		cmd.TTY = &size
		assert.ErrorIs(t, cmd.Run(), sandbox.ErrInvalidOption, "size %v", size)
	}
	cmd = sb.Command(ctx, "sleep 0.2")
	require.NoError(t, cmd.Start())
	assert.ErrorIs(t, cmd.Resize(ctx, 24, 80), sandbox.ErrNoTerminal)
	require.NoError(t, cmd.Wait())

	// The output of a command on a terminal, with Output.
	cmd = sb.Command(ctx, "echo out; echo err >&2; exit 5")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	out, err := cmd.Output()
	assert.Equal(t, 5, exitStatus(t, err))
	assert.Equal(t, "out\r\nerr\r\n", string(out))
	var ee *sandbox.ExitError
	if errors.As(err, &ee) {
		assert.Empty(t, ee.Stderr, "stderr is the terminal")
	}
}

// A container without /dev/ptmx (root removed it) cannot give a terminal:
// the command fails to start with an error that says so and matches
// fs.ErrNotExist; commands without a terminal still run.
func TestTTYNoPTY(t *testing.T) {
	requireExecAs(t)
	t.Parallel()
	sb := newSandbox(t, images[0])
	ctx := testCtx(t)
	res, err := sb.Execute(ctx, "rm -f /dev/ptmx && echo removed", sandbox.ExecUser("0"))
	require.NoError(t, err)
	if !strings.Contains(res.Output, "removed") {
		t.Skipf("root cannot remove /dev/ptmx here: %s", res.Output)
	}
	cmd := sb.Command(ctx, "true")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	err = cmd.Run()
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "no pseudo-terminal in the sandbox")
	assert.Equal(t, "ok", mustSh(t, sb, "echo ok"))
}
