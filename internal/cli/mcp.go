package cli

import (
	"context"
	"fmt"
	"os/exec"
)

// mcpInstall is the command that installs sandbox-mcp, as mcp/README.md
// says, into the one install directory, $(go env GOPATH)/bin.
const mcpInstall = `go build -C mcp -o "$(go env GOPATH)/bin/sandbox-mcp" ./cmd/sandbox-mcp`

// mcp runs the MCP server, which lives in its own module (the
// sandbox-mcp command), so that this command stays light. The server
// must see the signals that end it, to remove its sandboxes first:
// runMCP makes sure it does.
func mcp(ctx context.Context, args []string) error {
	bin, err := exec.LookPath("sandbox-mcp")
	if err != nil {
		return fmt.Errorf("sandbox-mcp is not on PATH; build it from a clone with: %s (and have $(go env GOPATH)/bin on PATH)", cfg.MCPInstall)
	}
	return runMCP(ctx, bin, args)
}
