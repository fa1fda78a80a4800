package sandboxmcp_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startHTTP serves h on a loopback httptest server, closed (after h) at
// the end of the test.
func startHTTP(t *testing.T, h *sandboxmcp.HTTPHandler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		srv.Close()
	})
	return srv.URL + "/mcp"
}

// connectHTTP connects a client session to url.
func connectHTTP(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := newClient().Connect(sandboxtest.Context(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sandboxID returns the ID of the sandbox the session works in: the
// container's hostname.
func sandboxID(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	out := callOK(t, sandboxtest.Context(t), cs, "execute", map[string]any{"command": "hostname"})
	m := regexp.MustCompile(`^([0-9a-f]{12})\n`).FindStringSubmatch(out)
	require.Len(t, m, 2, "hostname output %q", out)
	return m[1]
}

// TestHTTPSessions: each MCP session gets its own sandbox; a session that
// ends (DELETE) or stays idle loses it; closing the handler leaves none.
func TestHTTPSessions(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cfg := testConfig(label)
	const idle = 2 * time.Second // short, but long enough for the gaps between the calls below on a busy machine
	cfg.IdleTimeout = idle
	h := sandboxmcp.NewHTTPHandler(cfg)
	url := startHTTP(t, h)

	a := connectHTTP(t, url)
	b := connectHTTP(t, url)
	assert.Equal(t, "2025-11-25", a.InitializeResult().ProtocolVersion, "a stateful HTTP server negotiates the legacy protocol")
	checkTools(t, ctx, a)
	assert.Empty(t, containers(t, label), "listing tools creates no sandbox")

	// Concurrently, in both sessions: the same path, different contents.
	var wg sync.WaitGroup
	for name, cs := range map[string]*mcp.ClientSession{"a": a, "b": b} {
		wg.Go(func() {
			content := "content of session " + name + "\n"
			assert.Equal(t, "Updated file /workspace/same.txt",
				callOK(t, ctx, cs, "write_file", map[string]any{"file_path": "same.txt", "content": content}))
			assert.Equal(t, "1  content of session "+name,
				callOK(t, ctx, cs, "read_file", map[string]any{"file_path": "same.txt"}))
		})
	}
	wg.Wait()
	idA, idB := sandboxID(t, a), sandboxID(t, b)
	assert.NotEqual(t, idA, idB)
	assert.ElementsMatch(t, []string{idA, idB}, containers(t, label))
	sandboxes := h.Sandboxes()
	assert.Len(t, sandboxes, 2)
	assert.Equal(t, idA, sandboxes[a.ID()])
	assert.Equal(t, idB, sandboxes[b.ID()])
	// Still each its own file.
	assert.Equal(t, "1  content of session a", callOK(t, ctx, a, "read_file", map[string]any{"file_path": "same.txt"}))
	assert.Equal(t, "1  content of session b", callOK(t, ctx, b, "read_file", map[string]any{"file_path": "same.txt"}))

	// A keeps working while B is idle: A's calls do not keep B alive.
	// Closing A (HTTP DELETE) removes its sandbox before Close returns.
	require.NoError(t, a.Close())
	assert.Equal(t, []string{idB}, containers(t, label))

	// B, idle, loses its sandbox after the idle timeout.
	start := time.Now()
	waitGone(t, label, idle+10*time.Second)
	t.Logf("idle session's sandbox removed %v after its last call", time.Since(start).Round(10*time.Millisecond))
	assert.Empty(t, h.Sandboxes())
	_, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{"path": "/"}})
	assert.Error(t, err, "the idle session is gone")

	// A new session starts afresh.
	c := connectHTTP(t, url)
	assert.Equal(t, "No files found", callOK(t, ctx, c, "glob", map[string]any{"pattern": "same.txt"}))
	require.Len(t, containers(t, label), 1)
	require.NoError(t, h.Close())
	assert.Empty(t, containers(t, label))
}

// TestHTTPClose: closing the handler removes every sandbox at once, even
// with a command running, and refuses new sessions.
func TestHTTPClose(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	h := sandboxmcp.NewHTTPHandler(testConfig(label))
	url := startHTTP(t, h)

	a, b := connectHTTP(t, url), connectHTTP(t, url)
	sandboxID(t, a)
	sandboxID(t, b)
	require.Len(t, containers(t, label), 2)

	inFlightFails := callInFlight(t, ctx, a)
	start := time.Now()
	require.NoError(t, h.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Empty(t, containers(t, label))
	inFlightFails()
	_, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	assert.Error(t, err, "a closed handler refuses new sessions")
}

// TestHTTPDeleteDuringCall: a session deleted while a command runs loses
// its sandbox at once; the DELETE does not wait for the command. (The
// SDK's ClientSession.Close waits for its calls in flight before it sends
// the DELETE, so the test sends it itself, as another client may.)
func TestHTTPDeleteDuringCall(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	h := sandboxmcp.NewHTTPHandler(testConfig(label))
	url := startHTTP(t, h)

	a := connectHTTP(t, url)
	sandboxID(t, a)
	inFlightFails := callInFlight(t, ctx, a)
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", a.ID())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Empty(t, containers(t, label))
	assert.Empty(t, h.Sandboxes())
	inFlightFails()
}

// TestHTTPCommand runs the command with -transport http on a free loopback
// port: a client works in its sandbox, and SIGTERM removes it and exits 0.
func TestHTTPCommand(t *testing.T) {
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)

	cmd := exec.Command(bin, append(commandArgs(label), "-transport", "http", "-addr", "127.0.0.1:0",
		"-memory", "64m", "-cpus", "1.5", "-pids", "100", "-network", "none", "-env", "A=b")...)
	stderrPipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	log := &syncBuffer{}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderrPipe)
		re := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/mcp)`)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatalf("no URL in the log:\n%s", log)
	}
	assert.NotContains(t, log.String(), "non-loopback")

	cs := connectHTTP(t, url)
	checkTools(t, ctx, cs)
	exercise(t, ctx, cs)
	assert.Equal(t, "b\n\n[Command succeeded with exit code 0]", callOK(t, ctx, cs, "execute", map[string]any{"command": "echo $A"}))
	ids := containers(t, label)
	require.Len(t, ids, 1)
	info, err := testenv.Client(t).ContainerInspect(ctx, ids[0], client.ContainerInspectOptions{})
	require.NoError(t, err)
	hc := info.Container.HostConfig
	assert.EqualValues(t, 64<<20, hc.Memory)
	assert.EqualValues(t, 15e8, hc.NanoCPUs)
	require.NotNil(t, hc.PidsLimit)
	assert.EqualValues(t, 100, *hc.PidsLimit)
	assert.EqualValues(t, "none", hc.NetworkMode)

	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "log:\n%s", log)
	case <-time.After(20 * time.Second):
		t.Fatalf("the server did not exit after SIGTERM; log:\n%s", log)
	}
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Empty(t, containers(t, label))
	assert.Contains(t, log.String(), "reason=shutdown")
}
