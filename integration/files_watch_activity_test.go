//go:build linux

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// An open Watch is activity for the idle timeout, as an open Dial
// connection is (the helper counts every request in flight on the shared
// channel, a stream too): the sandbox outlives its idle timeout while
// nothing but the watch is open, the watch still reports changes, and the
// sandbox ends once the watch is closed.
func TestWatchIsActivity(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithIdleTimeout(5*time.Second), sandbox.WithProcessKeepAlive(false))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	w, err := sb.Watch(ctx, "/tmp", false)
	require.NoError(t, err)
	time.Sleep(8 * time.Second) // past the idle timeout, nothing but the watch
	require.NoError(t, sb.Write(testCtx(t), "/tmp/after-idle", []byte("x")))
	deadline := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case ev, ok := <-w.Events():
			require.True(t, ok, "the watch ended: %v", w.Err())
			seen = ev.Path == "/tmp/after-idle"
		case <-deadline:
			t.Fatal("no event for /tmp/after-idle: the sandbox did not outlive its idle timeout with a watch open")
		}
	}
	cancel()
	waitGone(t, sb.ID())
}
