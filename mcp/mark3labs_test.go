package sandboxmcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	mcpclient "github.com/mark3labs/mcp-go/client"
	mark "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mark3labs/mcp-go's client, as a user makes it (no option), works over
// stdio and HTTP alike: it asks for protocol version 2026-07-28 first
// (server/discover), is told the versions the server has, and settles on
// 2025-11-25 with the initialize handshake on both. (HTTP used to answer
// its first tool call `unsupported protocol version: "2026-07-28"` while
// stdio accepted it.) It sees the tools' annotations; closing it removes
// the sandbox (HTTP: DELETE; stdio: the server exits).
func TestMark3labsClient(t *testing.T) {
	check := func(t *testing.T, c *mcpclient.Client, label string, networked bool) {
		ctx := sandboxtest.Context(t)
		res, err := c.Initialize(ctx, mark.InitializeRequest{})
		require.NoError(t, err)
		assert.Equal(t, "2025-11-25", res.ProtocolVersion)
		assert.Equal(t, "dockersandbox", res.ServerInfo.Name)

		list, err := c.ListTools(ctx, mark.ListToolsRequest{})
		require.NoError(t, err)
		require.Len(t, list.Tools, len(toolNames))
		for _, tool := range list.Tools {
			want := sandboxmcp.Annotations(tool.Name, networked)
			require.NotNil(t, want, tool.Name)
			got := tool.Annotations
			assert.Equal(t, want.Title, got.Title, tool.Name)
			assert.Equal(t, want.Title, tool.Title, tool.Name)
			require.NotNil(t, got.ReadOnlyHint, tool.Name)
			assert.Equal(t, want.ReadOnlyHint, *got.ReadOnlyHint, "%s readOnlyHint", tool.Name)
			assert.Equal(t, *want.DestructiveHint, *got.DestructiveHint, "%s destructiveHint", tool.Name)
			assert.Equal(t, want.IdempotentHint, *got.IdempotentHint, "%s idempotentHint", tool.Name)
			assert.Equal(t, *want.OpenWorldHint, *got.OpenWorldHint, "%s openWorldHint", tool.Name)
		}

		r, err := c.CallTool(ctx, mark.CallToolRequest{Params: mark.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "echo hi"}}})
		require.NoError(t, err)
		assert.False(t, r.IsError)
		require.Len(t, r.Content, 1)
		assert.Equal(t, "hi\n\n[Command succeeded with exit code 0]", r.Content[0].(mark.TextContent).Text)
		require.Len(t, containers(t, label), 1)

		require.NoError(t, c.Close())
		waitGone(t, label, 20*time.Second)
	}

	t.Run("stdio", func(t *testing.T) {
		bin := buildCommand(t)
		label := newLabel(t)
		removeLeftovers(t, label)
		c, err := mcpclient.NewStdioMCPClient(bin, nil, append(commandArgs(label), "-network", "none")...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		check(t, c, label, false)
	})
	t.Run("http", func(t *testing.T) {
		label := newLabel(t)
		removeLeftovers(t, label)
		url := startHTTP(t, sandboxmcp.NewHTTPHandler(testConfig(label)))
		c, err := mcpclient.NewStreamableHttpClient(url)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.Start(context.Background()))
		check(t, c, label, true)
	})
}

// The server accepts the same protocol versions over stdio and HTTP: each
// that has sessions, none newer.
func TestProtocolVersions(t *testing.T) {
	assert.Equal(t, []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, sandboxmcp.ProtocolVersions())
}
