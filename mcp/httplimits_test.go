package sandboxmcp_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// postInitialize opens a session with a raw POST and returns the response
// status and body.
func postInitialize(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(sandboxtest.Context(t), http.MethodPost, url, strings.NewReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.Cleanup(func() { // end the session
			req, _ := http.NewRequest(http.MethodDelete, url, nil)
			req.Header.Set("Mcp-Session-Id", id)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	return resp.StatusCode, string(body)
}

// TestHTTPMaxSessions: past MaxSessions, a new session is refused with
// HTTP 503 and a JSON-RPC error naming the cap; ending a session makes
// room again.
func TestHTTPMaxSessions(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cfg := testConfig(label)
	cfg.MaxSessions = 2
	h := sandboxmcp.NewHTTPHandler(cfg)
	url := startHTTP(t, h)

	a := connectHTTP(t, url)
	b := connectHTTP(t, url)
	sandboxID(t, a)
	code, body := postInitialize(t, url)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "too many MCP sessions: this server serves at most 2 at once")
	assert.Contains(t, body, `"jsonrpc":"2.0"`)
	_, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	assert.ErrorContains(t, err, "Service Unavailable", "the SDK's client sees the 503")
	assert.Len(t, containers(t, label), 1, "a refused session costs no sandbox")

	require.NoError(t, b.Close())
	// Room again, once the SDK has let go of B's session (a moment
	// after the DELETE is answered).
	var c *mcp.ClientSession
	require.Eventually(t, func() bool {
		c, err = newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "a session is open again after another ended: %v", err)
	t.Cleanup(func() { c.Close() })
	sandboxID(t, c)
	assert.Len(t, containers(t, label), 2)
	require.NoError(t, a.Close())
	require.NoError(t, c.Close())
	assert.Empty(t, containers(t, label))
}

// TestHTTPDefaultMaxSessions: the default cap is DefaultMaxSessions; a
// negative MaxSessions means none.
func TestHTTPDefaultMaxSessions(t *testing.T) {
	for _, tt := range []struct {
		max, open, wantStatus int
	}{
		{0, sandboxmcp.DefaultMaxSessions, http.StatusServiceUnavailable},
		{-1, sandboxmcp.DefaultMaxSessions, http.StatusOK},
	} {
		cfg := testConfig(newLabel(t))
		cfg.MaxSessions = tt.max
		url := startHTTP(t, sandboxmcp.NewHTTPHandler(cfg))
		for i := range tt.open {
			code, body := postInitialize(t, url)
			require.Equal(t, http.StatusOK, code, "session %d: %s", i, body)
		}
		code, _ := postInitialize(t, url)
		assert.Equal(t, tt.wantStatus, code, "MaxSessions %d", tt.max)
	}
}

// TestHTTPRemovalReasonsLogged: the log tells a session the client ended
// (DELETE) from one removed for idleness.
func TestHTTPRemovalReasonsLogged(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	cfg := testConfig(label)
	// Long enough for A's first call and DELETE to follow each other
	// within it on a busy machine (at 3 s, CI's checks lane beside the
	// Docker stage once took A for idle).
	cfg.IdleTimeout = 10 * time.Second
	log := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	h := sandboxmcp.NewHTTPHandler(cfg)
	url := startHTTP(t, h)

	// B makes one call, then stays idle; A ends its session (DELETE).
	idB := sandboxID(t, connectHTTP(t, url))
	a := connectHTTP(t, url)
	idA := sandboxID(t, a)
	require.NoError(t, a.Close())
	waitGone(t, label, 40*time.Second)
	removed := func(id string) string {
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, "sandbox removed") && strings.Contains(l, id) {
				return l
			}
		}
		return ""
	}
	// The server logs a removal once Close returned, a moment after the
	// container is gone.
	for deadline := time.Now().Add(10 * time.Second); (removed(idA) == "" || removed(idB) == "") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	assert.Contains(t, removed(idA), `reason="client ended the session"`)
	assert.Contains(t, removed(idB), `reason="idle timeout (no request for 10s)"`)
}

// TestConfigValidate: a default timeout above the maximum, or none while a
// maximum holds, is refused before anything is created.
func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		exec, max time.Duration
		ok        bool
	}{
		{0, 0, true},              // 120 s under 3600 s
		{time.Hour, 0, true},      // at the default maximum
		{time.Hour + 1, 0, false}, // above it
		{-1, 0, false},            // none
		{0, time.Minute, false},   // the library's default (120 s) above 1 m
		{time.Second, time.Second, true},
	} {
		cfg := testConfig("unused")
		cfg.ExecuteTimeout, cfg.Tools.MaxExecuteTimeout = tt.exec, tt.max
		err := cfg.Validate()
		if tt.ok {
			assert.NoError(t, err, "%v/%v", tt.exec, tt.max)
			continue
		}
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "%v/%v", tt.exec, tt.max)
		_, err = sandboxmcp.NewSandbox(sandboxtest.Context(t), cfg)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	}
}
