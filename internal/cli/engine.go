package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/engineflag"
)

// engineFlags adds -engine and the engines' own flags to fs.
func engineFlags(fs *flag.FlagSet) *engineflag.Choice { return cfg.Engines.AddFlags(fs) }

// connect opens the engine c chose: the sandbox options that run on it
// and a func that closes it (after the command's sandboxes). An engine the
// binary does not have is a usage error naming the binary that has it.
func connect(ctx context.Context, c *engineflag.Choice) ([]sandbox.Option, func(), error) {
	opts, eng, err := c.Open(ctx)
	switch {
	case errors.Is(err, engineflag.ErrUnknown):
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	case err != nil:
		return nil, nil, err
	case eng == nil:
		return opts, func() {}, nil
	}
	return opts, func() { eng.Close() }, nil
}
