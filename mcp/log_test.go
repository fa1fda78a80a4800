package sandboxmcp_test

import (
	"log/slog"
	"os"
)

// discardLogger is the servers' logger in tests: nothing, or stderr when
// SANDBOXMCP_TEST_LOG is set.
func discardLogger() *slog.Logger {
	if os.Getenv("SANDBOXMCP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
