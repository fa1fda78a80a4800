//go:build unix

package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox"
)

// resizeBound bounds one resize: a sandbox that does not take it must not
// hold the next.
const resizeBound = 5 * time.Second

// forwardResizes resizes c's terminal on every SIGWINCH until stop is
// called.
func forwardResizes(ctx context.Context, fd int, c *sandbox.Cmd) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-sigs:
				rctx, cancel := context.WithTimeout(ctx, resizeBound)
				resizeTo(rctx, fd, c)
				cancel()
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-finished
	}
}
