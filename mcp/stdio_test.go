package sandboxmcp_test

import (
	"bufio"
	"bytes"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startStdio runs the command over stdio and connects a client to it.
func startStdio(t *testing.T, bin string, args ...string) (*mcp.ClientSession, *exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := newClient().Connect(sandboxtest.Context(t), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "connect; server log:\n%s", stderr)
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", stderr)
		}
	})
	return cs, cmd, stderr
}

// TestStdio runs the command over stdio with the SDK's client: the tools
// are listed and work in one sandbox, which the server removes when the
// client disconnects.
func TestStdio(t *testing.T) {
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)

	cs, cmd, stderr := startStdio(t, bin, commandArgs(label)...)
	require.Len(t, containers(t, label), 1, "the sandbox is created at start")
	checkTools(t, ctx, cs)
	exercise(t, ctx, cs)
	// Every call went to the same sandbox: the file is still there.
	callOK(t, ctx, cs, "write_file", map[string]any{"file_path": "/tmp/x", "content": "x"})
	assert.Equal(t, "1  x", callOK(t, ctx, cs, "read_file", map[string]any{"file_path": "/tmp/x"}))
	require.Len(t, containers(t, label), 1)

	// Closing the client closes the server's stdin: it removes the sandbox
	// and exits 0 before the SDK's 5 s grace period (no SIGTERM needed).
	start := time.Now()
	require.NoError(t, cs.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "server log:\n%s", stderr)
	assert.Empty(t, containers(t, label))
	assert.Contains(t, stderr.String(), "sandbox removed")
	assert.Contains(t, stderr.String(), "client disconnected")
}

// TestStdioSIGTERM: SIGTERM during a long command removes the sandbox and
// ends the process at once, with status 0.
func TestStdioSIGTERM(t *testing.T) {
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)

	cs, cmd, stderr := startStdio(t, bin, commandArgs(label)...)
	callOK(t, ctx, cs, "write_file", map[string]any{"file_path": "a", "content": "a"})
	require.Len(t, containers(t, label), 1)

	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "sleep 100"}})
		called <- err
	}()
	time.Sleep(500 * time.Millisecond) // let the command start
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan struct{})
	go func() {
		// CommandTransport's Close waits for the process.
		cs.Close()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not exit after SIGTERM; log:\n%s", stderr)
	}
	assert.Less(t, time.Since(start), 10*time.Second)
	select {
	case <-called: // an error or an error result, but it returned
	case <-time.After(10 * time.Second):
		t.Error("the call in flight did not return")
	}
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "server log:\n%s", stderr)
	assert.Empty(t, containers(t, label))
	assert.Contains(t, stderr.String(), "reason=shutdown")
}

// TestStdioBadImage: a sandbox that cannot be created makes the command
// exit 1 with the reason on stderr, leaving nothing.
func TestStdioBadImage(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	cmd := exec.Command(bin, "-image", "dockersandbox-test/does-not-exist:1", "-pull", "never", "-label", testLabelKey+"="+label)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run() // stdin is /dev/null
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.Equal(t, 1, exitErr.ExitCode())
	assert.Contains(t, stderr.String(), "image not found")
	assert.Empty(t, containers(t, label))
}

// TestCommandFlags: bad flags are refused with status 2 before anything
// is created.
func TestCommandFlags(t *testing.T) {
	bin := buildCommand(t)
	for _, args := range [][]string{
		{"-transport", "sse"},
		{"-pull", "sometimes"},
		{"-memory", "lots"},
		{"-memory", "-1g"},
		{"-exec-timeout", "-1s"},
		{"-exec-timeout", "0"},                             // no timeout: above every maximum
		{"-exec-timeout", "2h"},                            // above the default maximum (1h)
		{"-exec-timeout", "3s", "-max-exec-timeout", "2s"}, // above the maximum
		{"-max-exec-timeout", "0"},
		{"-max-sessions", "-1"},
		{"-label", "novalue"},
		{"extra"},
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if assert.ErrorAs(t, err, &exitErr, "%v", args) {
			assert.Equal(t, 2, exitErr.ExitCode(), "%v: %s", args, stderr.String())
		}
		assert.NotEmpty(t, strings.TrimSpace(stderr.String()), "%v", args)
		if args[0] == "-exec-timeout" && args[1] != "-1s" {
			assert.Contains(t, stderr.String(), "-max-exec-timeout", "%v: the message names the maximum", args)
		}
	}
}

// TestStdioEOFDuringCall: a client that closes the server's stdin while a
// command runs (without waiting for it, as the SDK's client would) gets
// its sandbox removed at once, and the server exits 0 without a signal.
// The client here is raw JSON-RPC, at an older protocol version.
func TestStdioEOFDuringCall(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)

	cmd := exec.Command(bin, commandArgs(label)...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(msg string) {
		_, err := io.WriteString(stdin, msg+"\n")
		require.NoError(t, err)
	}
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer; server log:\n%s", stderr)
			return ""
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	assert.Contains(t, next(), `"protocolVersion":"2025-06-18"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"echo hi"}}}`)
	assert.Contains(t, next(), `hi\n\n[Command succeeded with exit code 0]`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"command":"sleep 100"}}}`)
	time.Sleep(500 * time.Millisecond)
	require.Len(t, containers(t, label), 1)

	start := time.Now()
	require.NoError(t, stdin.Close())
	done := make(chan error, 1)
	go func() {
		for range lines { // the answer to the call in flight, if any
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		assert.NoError(t, err, "server log:\n%s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not exit; log:\n%s", stderr)
	}
	t.Logf("exited %v after stdin closed", time.Since(start).Round(time.Millisecond))
	assert.Less(t, time.Since(start), 8*time.Second)
	assert.Empty(t, containers(t, label))
	assert.Contains(t, stderr.String(), `reason="client disconnected"`)
}
