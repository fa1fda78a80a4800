package sandboxmcp_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawServer is the command over stdio, driven with raw JSON-RPC lines, its
// stdout and stderr pipes in the test's hands.
type rawServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr io.ReadCloser
	lines  chan string // stdout
	log    *syncBuffer // stderr, as read so far
	exited chan error
}

// startRaw starts bin with args over stdio and initializes an MCP session.
func startRaw(t *testing.T, bin string, args ...string) *rawServer {
	t.Helper()
	s := &rawServer{t: t, cmd: exec.Command(bin, args...), lines: make(chan string, 64), log: &syncBuffer{}, exited: make(chan error, 1)}
	var err error
	s.stdin, err = s.cmd.StdinPipe()
	require.NoError(t, err)
	s.stdout, err = s.cmd.StdoutPipe()
	require.NoError(t, err)
	s.stderr, err = s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("server log:\n%s", s.log)
		}
	})
	go func() {
		sc := bufio.NewScanner(s.stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() {
		io.Copy(s.log, s.stderr)
		// Wait closes the pipes once the process is gone and the copies
		// are done; it must not run before they end.
		s.exited <- s.cmd.Wait()
	}()
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Contains(t, s.next(), `"protocolVersion":"2025-06-18"`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawServer) send(msg string) {
	s.t.Helper()
	_, err := io.WriteString(s.stdin, msg+"\n")
	require.NoError(s.t, err)
}

func (s *rawServer) next() string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		require.True(s.t, ok, "stdout ended; server log:\n%s", s.log)
		return l
	case <-time.After(60 * time.Second):
		s.t.Fatalf("no answer; server log:\n%s", s.log)
		return ""
	}
}

// sandboxID asks the server for its sandbox's ID (the container's
// hostname), which makes the server create the sandbox if it has not yet.
func (s *rawServer) sandboxID() string {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"hostname"}}}`)
	line := s.next()
	m := regexp.MustCompile(`"text":"([0-9a-f]{12})\\n`).FindStringSubmatch(line)
	require.Len(s.t, m, 2, "answer: %s", line)
	return m[1]
}

// waitExit waits for the process to exit, within bound, and returns its
// status and how long it took.
func (s *rawServer) waitExit(bound time.Duration) (int, time.Duration) {
	s.t.Helper()
	start := time.Now()
	go func() {
		for range s.lines { // whatever else the server says
		}
	}()
	select {
	case <-s.exited:
		s.exited <- nil // for the cleanup
	case <-time.After(bound):
		s.t.Fatalf("the server did not exit within %v; log:\n%s", bound, s.log)
	}
	return s.cmd.ProcessState.ExitCode(), time.Since(start)
}

// exitBound is how long the server may take to exit once its way out is
// triggered: removing a sandbox takes about a second; slack for a busy
// machine.
const exitBound = 20 * time.Second

// TestStdioExitPaths: on every way out (stdin closed, malformed input,
// SIGINT, SIGTERM, SIGHUP, a broken stdout) the server removes its sandbox
// and exits with status 0 within exitBound. The sandbox exists (a first
// tool call answered) before the exit is triggered.
func TestStdioExitPaths(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := buildCommand(t)
	for _, tt := range []struct {
		name    string
		trigger func(s *rawServer)
		reason  string
	}{
		{"stdin closed", func(s *rawServer) { s.stdin.Close() }, `reason="client disconnected"`},
		{"malformed input", func(s *rawServer) { s.send(`garbage{{{`) }, `reason="client disconnected"`},
		{"SIGINT", func(s *rawServer) { s.cmd.Process.Signal(syscall.SIGINT) }, `reason=shutdown`},
		{"SIGTERM", func(s *rawServer) { s.cmd.Process.Signal(syscall.SIGTERM) }, `reason=shutdown`},
		{"SIGHUP", func(s *rawServer) { s.cmd.Process.Signal(syscall.SIGHUP) }, `reason=shutdown`},
		{"stdout closed", func(s *rawServer) {
			// The next answer fails to be written: EPIPE, not SIGPIPE.
			s.stdout.Close()
			s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo hi"}}}`)
		}, `reason="client disconnected"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			label := newLabel(t)
			removeLeftovers(t, label)
			s := startRaw(t, bin, commandArgs(label)...)
			id := s.sandboxID()
			require.True(t, testenv.SandboxExists(t, id))
			tt.trigger(s)
			code, took := s.waitExit(exitBound)
			t.Logf("exited with status %d %v after the trigger", code, took.Round(time.Millisecond))
			assert.Equal(t, 0, code, "log:\n%s", s.log)
			assert.False(t, testenv.SandboxExists(t, id), "the sandbox is removed")
			assert.Contains(t, s.log.String(), tt.reason)
		})
	}
}

// TestStdioStderrClosed: a server whose stderr is closed (its reader went
// away) right after it created its sandbox is not killed by SIGPIPE: it
// keeps serving, with its log dropped, and still removes the sandbox on
// its way out. -v makes it log on every message.
func TestStdioStderrClosed(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	s := startRaw(t, bin, append(commandArgs(label), "-v")...)
	require.Eventually(t, func() bool { return bytes.Contains([]byte(s.log.String()), []byte("sandbox created")) }, 30*time.Second, 50*time.Millisecond)
	s.stderr.Close()
	id := s.sandboxID() // logged by the SDK: a write to the broken stderr
	require.True(t, testenv.SandboxExists(t, id))
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo still here"}}}`)
	assert.Contains(t, s.next(), `still here`)
	s.stdin.Close()
	code, _ := s.waitExit(exitBound)
	assert.Equal(t, 0, code, "exit status (SIGPIPE would be -1)")
	assert.False(t, testenv.SandboxExists(t, id), "the sandbox is removed")
}

// TestStdioTimeoutCap: with -max-exec-timeout, {"timeout": 0} runs for the
// maximum, not without a bound; a larger timeout is refused.
func TestStdioTimeoutCap(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	s := startRaw(t, bin, append(commandArgs(label), "-max-exec-timeout", "2s", "-exec-timeout", "1s")...)
	start := time.Now()
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"sleep 60","timeout":0}}}`)
	line := s.next()
	took := time.Since(start)
	assert.Contains(t, line, `Error: Command timed out after 2 seconds.`)
	assert.Contains(t, line, `exit code 124`)
	assert.GreaterOrEqual(t, took, 2*time.Second)
	assert.Less(t, took, 20*time.Second, "bounded by the maximum (and the sandbox's creation)")
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"sleep 60","timeout":3}}}`)
	line = s.next()
	assert.Contains(t, line, `Error: timeout 3s exceeds maximum allowed (2s).`)
	assert.Contains(t, line, `"isError":true`)
	s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute","arguments":{"command":"sleep 60"}}}`)
	assert.Contains(t, s.next(), `Error: Command timed out after 1 seconds.`, "the default")
	s.stdin.Close()
	code, _ := s.waitExit(exitBound)
	assert.Equal(t, 0, code)
}

// startHTTPCommand runs the command with -transport http on a free
// loopback port and returns it, its URL, its log, and a channel closed
// once the log was read to its end (after the command exits: its stderr
// is an OS pipe of the test's, which Wait does not close under the
// reader, unlike StderrPipe's).
func startHTTPCommand(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *syncBuffer, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(bin, append(args, "-transport", "http", "-addr", "127.0.0.1:0")...)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stderr = pw
	err = cmd.Start()
	pw.Close() // the child holds its own
	if err != nil {
		pr.Close()
		require.NoError(t, err)
	}
	log := &syncBuffer{}
	urls := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/mcp)`)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-copied
	})
	select {
	case url := <-urls:
		return cmd, url, log, copied
	case <-time.After(30 * time.Second):
		t.Fatalf("no URL in the log:\n%s", log)
		return nil, "", nil, nil
	}
}

// TestHTTPCommandExitPaths: SIGINT and SIGHUP end the HTTP server through
// its shutdown, removing every session's sandbox, with status 0 within
// exitBound; -max-sessions caps the sessions (503 past it).
func TestHTTPCommandExitPaths(t *testing.T) {
	bin := buildCommand(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			label := newLabel(t)
			removeLeftovers(t, label)
			cmd, url, log, logged := startHTTPCommand(t, bin, append(commandArgs(label), "-max-sessions", "1")...)
			cs := connectHTTP(t, url)
			id := sandboxID(t, cs)
			require.True(t, testenv.SandboxExists(t, id))
			code, body := postInitialize(t, url)
			assert.Equal(t, 503, code, body)

			require.NoError(t, cmd.Process.Signal(sig))
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				assert.NoError(t, err, "log:\n%s", log)
			case <-time.After(exitBound):
				t.Fatalf("the server did not exit within %v; log:\n%s", exitBound, log)
			}
			t.Logf("exited %v after %v", time.Since(start).Round(time.Millisecond), sig)
			assert.False(t, testenv.SandboxExists(t, id), "the sandbox is removed")
			select {
			case <-logged: // its last lines too
			case <-time.After(10 * time.Second):
				t.Fatal("the log did not end 10 s after the command")
			}
			assert.Contains(t, log.String(), "reason=shutdown")
		})
	}
}
