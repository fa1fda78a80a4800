package sandboxmcp_test

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execToolNames are the session tools Config.ExecTools (-exec-tools) adds.
var execToolNames = []string{"exec_command", "kill_session", "list_sessions", "write_stdin"}

// listedTools returns the names of the listed tools, checking each one's
// annotations against Annotations.
func listedTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession, networked bool) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		want := sandboxmcp.Annotations(tool.Name, networked)
		require.NotNil(t, want, tool.Name)
		assert.Equal(t, want, tool.Annotations, tool.Name)
		schema, ok := tool.InputSchema.(map[string]any)
		require.True(t, ok, tool.Name)
		assert.Equal(t, false, schema["additionalProperties"], tool.Name)
	}
	return names
}

// withExecTools is toolNames with the session tools, in the server's
// (sorted) order.
func withExecTools() []string {
	names := slices.Concat(toolNames, execToolNames)
	slices.Sort(names)
	return names
}

var sessionRE = regexp.MustCompile(`\nProcess running with session ID ([0-9]+)\n`)

// driveExecTools starts a shell on a tty with exec_command, drives it with
// write_stdin, polls it, lists and kills it, over the client session.
func driveExecTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	out := callOK(t, ctx, cs, "exec_command", map[string]any{"cmd": "echo ready; sh", "tty": true, "yield_time_ms": 1000})
	m := sessionRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id, _ := strconv.Atoi(m[1])
	assert.Contains(t, out, "Output:\nready\r\n")

	out = callOK(t, ctx, cs, "write_stdin", map[string]any{"session_id": id, "chars": "echo $((6*7))\n", "yield_time_ms": 2000})
	assert.Contains(t, out, "42\r\n")
	assert.Contains(t, out, "Process running with session ID "+m[1])

	out = callOK(t, ctx, cs, "write_stdin", map[string]any{"session_id": id, "chars": ""}) // a poll: nothing new
	assert.Regexp(t, `Process running with session ID `+m[1]+`\nOriginal token count: 0\nOutput:\n$`, out)

	assert.Regexp(t, `^Session ID `+m[1]+`: running for [0-9.]+ seconds, tty: echo ready; sh$`, callOK(t, ctx, cs, "list_sessions", map[string]any{}))
	out = callOK(t, ctx, cs, "kill_session", map[string]any{"session_id": id})
	assert.Contains(t, out, "\nProcess exited with code 137\n")

	res := call(t, ctx, cs, "write_stdin", map[string]any{"session_id": id})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "Unknown process id "+m[1])

	out = callOK(t, ctx, cs, "exec_command", map[string]any{"cmd": "echo done"})
	assert.Regexp(t, `\nProcess exited with code 0\nOriginal token count: 2\nOutput:\ndone\n$`, out)
}

// TestExecTools: the session tools are served only when asked for
// (Config.ExecTools, -exec-tools), over stdio and HTTP, with truthful
// annotations, and a real client drives them.
func TestExecTools(t *testing.T) {
	t.Run("not by default", func(t *testing.T) {
		label := newLabel(t)
		removeLeftovers(t, label)
		ctx := sandboxtest.Context(t)
		cs, _ := serveInMemory(t, ctx, testConfig(label), "")
		assert.Equal(t, toolNames, listedTools(t, ctx, cs, true))
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cmd": "true"}})
		assert.True(t, err != nil || res.IsError, "exec_command is not served")
	})
	t.Run("stdio", func(t *testing.T) {
		bin := buildCommand(t)
		label := newLabel(t)
		removeLeftovers(t, label)
		ctx := sandboxtest.Context(t)
		cs, _, _ := startStdio(t, bin, append(commandArgs(label), "-exec-tools", "-network", "none")...)
		assert.Equal(t, withExecTools(), listedTools(t, ctx, cs, false))
		driveExecTools(t, ctx, cs)
	})
	t.Run("http", func(t *testing.T) {
		label := newLabel(t)
		removeLeftovers(t, label)
		ctx := sandboxtest.Context(t)
		cfg := testConfig(label)
		cfg.ExecTools = true
		cs := connectHTTP(t, startHTTP(t, sandboxmcp.NewHTTPHandler(cfg)))
		assert.Equal(t, withExecTools(), listedTools(t, ctx, cs, true))
		driveExecTools(t, ctx, cs)
	})
}
