//go:build unix

package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// runMCP replaces this process with the server (execve): same PID, same
// standard streams, and every signal (a terminal's Ctrl-C, SIGTERM,
// SIGHUP) reaches the server itself, once, so that it shuts down through
// its cleanup and removes its sandboxes. It returns only if the server
// could not be started.
func runMCP(ctx context.Context, bin string, args []string) error {
	// From here a signal has its default effect (no sandbox exists yet);
	// one caught before is honoured.
	signal.Reset()
	if err := ctx.Err(); err != nil {
		return err
	}
	err := syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
	return fmt.Errorf("starting %s: %w", bin, err)
}
