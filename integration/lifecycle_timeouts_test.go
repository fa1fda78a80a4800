//go:build linux

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lifetime ends a sandbox even while a command runs in it; the call
// fails with ErrGone, promptly.
func TestLifetimeEndsBusySandbox(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithLifetime(3*time.Second))
	start := time.Now()
	r := within(t, async2(func() (sandbox.ExecuteResponse, error) {
		return sb.Execute(context.Background(), "sleep 1000", sandbox.ExecTimeout(0))
	}), "a command outliving the lifetime")
	t.Logf("the command ended after %v: %v", time.Since(start), r.err)
	assert.ErrorIs(t, r.err, sandbox.ErrGone)
	waitGone(t, sb.ID())
	t.Logf("the container went after %v", time.Since(start))
}

// The idle timeout spares a sandbox in use and ends a forgotten one.
// (5 s: the clock runs from the container's start, and on 2 loaded cores
// New's end and the first call's exec can be seconds apart.)
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithIdleTimeout(5*time.Second))
	// Busy for longer than the idle timeout: a running command counts.
	res, err := sb.Execute(testCtx(t), "sleep 7; echo done")
	require.NoError(t, err)
	assert.Equal(t, "done\n", res.Output)
	// Then left alone.
	waitGone(t, sb.ID())
	_, err = sb.Execute(testCtx(t), "true")
	assert.ErrorIs(t, err, sandbox.ErrGone)
}
