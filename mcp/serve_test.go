package sandboxmcp_test

import (
	"context"
	"encoding/json"
	"strings"
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

// serveInMemory runs Serve on an in-memory transport and connects a client
// speaking protocol version (the latest if "").
func serveInMemory(t *testing.T, ctx context.Context, cfg sandboxmcp.Config, version string) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		served <- sandboxmcp.Serve(ctx, cfg, st)
	}()
	cs, err := newClient().Connect(sandboxtest.Context(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		select { // Serve removes the sandbox before it returns
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after the client closed")
		}
	})
	return cs, served
}

// TestServeCancel: ending Serve's context removes the sandbox, ends a
// command in flight, and Serve returns nil. The client speaks an older
// protocol version, as many clients do.
func TestServeCancel(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx, cancel := context.WithCancel(sandboxtest.Context(t))
	defer cancel()
	cs, served := serveInMemory(t, ctx, testConfig(label), "2025-06-18")
	assert.Equal(t, "2025-06-18", cs.InitializeResult().ProtocolVersion)
	exercise(t, ctx, cs)
	id := containers(t, label)
	require.Len(t, id, 1)

	inFlightFails := callInFlight(t, sandboxtest.Context(t), cs)
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Empty(t, containers(t, label))
	inFlightFails()
}

// TestServeDisconnect: the client going away removes the sandbox.
func TestServeDisconnect(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	cs, served := serveInMemory(t, sandboxtest.Context(t), testConfig(label), "")
	callOK(t, sandboxtest.Context(t), cs, "ls", map[string]any{"path": "/"})
	require.Len(t, containers(t, label), 1)
	require.NoError(t, cs.Close())
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
	assert.Empty(t, containers(t, label))
}

// TestBadArguments: arguments the tools refuse come back as results with
// IsError set, which the model can read, not as protocol errors; over
// stdio-like and HTTP sessions alike. An unknown tool is a protocol error.
func TestBadArguments(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cs, _ := serveInMemory(t, ctx, testConfig(label), "")
	h := sandboxmcp.NewHTTPHandler(testConfig(label))
	hs := connectHTTP(t, startHTTP(t, h))

	for _, session := range []*mcp.ClientSession{cs, hs} {
		for _, tc := range []struct {
			tool string
			args any
			want string
		}{
			{"read_file", map[string]any{"file_path": 5}, `"file_path" must be a string, got a number`},
			{"read_file", map[string]any{}, `missing required argument "file_path"`},
			{"execute", nil, `missing required argument "command"`},
			{"execute", map[string]any{"command": "true", "timeout": "soon"}, `"timeout" must be an integer`},
			{"execute", map[string]any{"command": "true", "timeout": 99999}, "exceeds maximum allowed"},
			{"write_file", map[string]any{"file_path": "a", "content": "x", "mode": "0644"}, `unknown argument "mode"`},
			{"grep", map[string]any{"pattern": "x", "output_mode": "lines"}, `"output_mode" must be one of`},
			{"ls", json.RawMessage(`[1,2]`), "arguments must be a JSON object"},
			{"read_file", map[string]any{"file_path": "../etc/passwd"}, "Path traversal not allowed"},
			{"read_file", map[string]any{"file_path": "/nope"}, "Error: File '/nope': file_not_found"},
		} {
			res := call(t, ctx, session, tc.tool, tc.args)
			got := text(t, res)
			assert.True(t, res.IsError, "%s %s: %s", tc.tool, mustJSON(tc.args), got)
			assert.Contains(t, got, tc.want, "%s %s", tc.tool, mustJSON(tc.args))
		}
		_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "rm_rf", Arguments: map[string]any{}})
		assert.ErrorContains(t, err, "unknown tool")
	}
}

// TestHTTPBadImage: a sandbox that cannot be created is a tool error of
// the call that needed it, and the session can go on (and fail again).
func TestHTTPBadImage(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cfg := testConfig(label)
	cfg.Image = "dockersandbox-test/does-not-exist:1"
	hs := connectHTTP(t, startHTTP(t, sandboxmcp.NewHTTPHandler(cfg)))
	for range 2 {
		res := call(t, ctx, hs, "ls", map[string]any{"path": "/"})
		assert.True(t, res.IsError)
		got := text(t, res)
		assert.True(t, strings.HasPrefix(got, "Error: creating the sandbox: "), got)
		assert.Contains(t, got, "image not found")
	}
	assert.Empty(t, containers(t, label))
}

// TestConfigLimits: the limits of the config reach the container.
func TestConfigLimits(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cfg := testConfig(label)
	cfg.Memory = 64 << 20
	cfg.CPUs = 0.5
	cfg.PidsLimit = 64
	cfg.NetworkMode = "none"
	cfg.WorkingDir = "/work"
	cfg.User = "sandbox"
	cfg.Env = []string{"GREETING=hi"}
	cfg.ExecuteTimeout = 2 * time.Second
	cs, _ := serveInMemory(t, ctx, cfg, "")

	out := callOK(t, ctx, cs, "execute", map[string]any{"command": "pwd; id -un; echo $GREETING; ls /sys/class/net"})
	assert.Equal(t, "/work\nsandbox\nhi\nlo\n\n[Command succeeded with exit code 0]", out)
	out = callOK(t, ctx, cs, "execute", map[string]any{"command": "sleep 10"})
	assert.Contains(t, out, "Command timed out after 2 seconds")

	cli := testenv.Client(t)
	ids := containers(t, label)
	require.Len(t, ids, 1)
	info, err := cli.ContainerInspect(ctx, ids[0], client.ContainerInspectOptions{})
	require.NoError(t, err)
	hc := info.Container.HostConfig
	assert.EqualValues(t, 64<<20, hc.Memory)
	assert.EqualValues(t, 5e8, hc.NanoCPUs)
	require.NotNil(t, hc.PidsLimit)
	assert.EqualValues(t, 64, *hc.PidsLimit)
	assert.EqualValues(t, "none", hc.NetworkMode)
}
