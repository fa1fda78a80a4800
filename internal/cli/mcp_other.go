//go:build !unix

package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"
)

// mcpWaitDelay bounds the wait for the server once it was asked to stop:
// its own shutdown is bounded (sandbox removals within 45 s, the HTTP
// server within 10 s more).
const mcpWaitDelay = 90 * time.Second

// runMCP runs the server as a child. The end of ctx (SIGINT or SIGTERM)
// asks it to stop with an interrupt, so that it removes its sandboxes,
// and kills it only if it is still running mcpWaitDelay later.
func runMCP(ctx context.Context, bin string, args []string) error {
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = mcpWaitDelay
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitError{ee.ExitCode()}
	}
	return err
}
