package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// mcp runs the MCP server, which lives in its own module (the
// sandbox-mcp command), so that this command stays light.
func mcp(ctx context.Context, args []string) error {
	bin, err := exec.LookPath("sandbox-mcp")
	if err != nil {
		return fmt.Errorf("sandbox-mcp is not on PATH; build it from a clone with: go build -C mcp -o \"$(go env GOPATH)/bin/sandbox-mcp\" ./cmd/sandbox-mcp")
	}
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitError{ee.ExitCode()}
	}
	return err
}
