//go:build !unix

package cli

import (
	"context"

	"github.com/dockersandbox/sandbox"
)

// forwardResizes does nothing where there is no SIGWINCH: the terminal
// keeps the size it had at the start.
func forwardResizes(context.Context, int, *sandbox.Cmd) (stop func()) { return func() {} }
