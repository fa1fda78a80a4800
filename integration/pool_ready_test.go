package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WaitReady returns once the pool holds a sandbox, so that Get takes no
// creation then (the sandbox Get hands out started before the call); it
// returns the error of a failed
// creation, ErrClosed after Close, and the context's error.
func TestPoolWaitReady(t *testing.T) {
	t.Parallel()
	p := newPool(t, sandbox.PoolSize(1))
	start := time.Now()
	require.NoError(t, p.WaitReady(testCtx(t)))
	t.Logf("first sandbox ready %v after NewPool", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, 1, p.Ready())
	start = time.Now()
	sb, err := p.Get(testCtx(t))
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("Get after WaitReady: %v", took)
	// Handed out, not created: it started before Get was called, where the
	// engine says when (a time bound failed on a busy Podman: 123 ms).
	if u, err := sb.Usage(testCtx(t)); err == nil {
		assert.True(t, u.Started.Before(start), "handed out, not created: started %v, Get called %v", u.Started, start)
	} else {
		require.ErrorIs(t, err, errors.ErrUnsupported)
		assert.Less(t, took, time.Second, "handed out, not created")
	}
	require.NoError(t, sb.Close())

	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	for p.Ready() > 0 { // take what the refill made, to wait again
		sb, err := p.Get(testCtx(t))
		require.NoError(t, err)
		require.NoError(t, sb.Close())
	}
	if err := p.WaitReady(ctx); err != nil { // unless the refill was quicker
		assert.ErrorIs(t, err, context.Canceled)
	}

	require.NoError(t, p.Close())
	assert.ErrorIs(t, p.WaitReady(testCtx(t)), sandbox.ErrClosed)

	bad := newPool(t, sandbox.PoolSandboxOptions(sandbox.WithImage("dockersandbox-test/no-such-image:1")))
	assert.ErrorIs(t, bad.WaitReady(testCtx(t)), sandbox.ErrImageNotFound)
}
