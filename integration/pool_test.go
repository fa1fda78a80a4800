package integration

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newPool(t *testing.T, opts ...sandbox.PoolOption) *sandbox.Pool {
	t.Helper()
	base := []sandbox.PoolOption{sandbox.PoolSandboxOptions(sandboxOptions(testenv.BusyboxImage)...)}
	p, err := sandbox.NewPool(testCtx(t), append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func TestPool(t *testing.T) {
	before := ours(t)
	p := newPool(t, sandbox.PoolSize(2))
	require.Eventually(t, func() bool { return p.Ready() == 2 }, time.Minute, 20*time.Millisecond)
	assert.NoError(t, p.Err())

	ctx := testCtx(t)
	sb, err := p.Get(ctx)
	require.NoError(t, err)
	resp, err := sb.Execute(ctx, "echo pooled")
	require.NoError(t, err)
	assert.Equal(t, "pooled\n", resp.Output)
	require.Eventually(t, func() bool { return p.Ready() == 2 }, time.Minute, 20*time.Millisecond, "refilled")
	require.NoError(t, sb.Close())

	// Ready sandboxes killed from outside are not handed out.
	for _, id := range testenv.Owned(t) {
		if testenv.Relayed() { // no kill through the engine: removed
			_ = removeBox(t, id)
			continue
		}
		_, _ = testenv.Client(t).ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	}
	sb, err = p.Get(ctx)
	require.NoError(t, err)
	resp, err = sb.Execute(ctx, "echo alive")
	require.NoError(t, err)
	assert.Equal(t, "alive\n", resp.Output)
	require.NoError(t, sb.Close())

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	_, err = p.Get(ctx)
	assert.ErrorIs(t, err, sandbox.ErrClosed)
	assert.Equal(t, before, ours(t), "the pool left nothing behind")
}

func TestPoolMaxIdle(t *testing.T) {
	t.Parallel()
	p := newPool(t, sandbox.PoolSize(1), sandbox.PoolMaxIdle(400*time.Millisecond))
	first := map[string]bool{}
	require.Eventually(t, func() bool {
		ids := testenv.Owned(t)
		if len(first) == 0 && p.Ready() == 1 {
			for _, id := range ids {
				first[id] = true
			}
			return false
		}
		for _, id := range ids {
			if !first[id] {
				return len(first) > 0 // a replacement appeared
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond)
}

func TestPoolInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, opt := range []sandbox.PoolOption{
		sandbox.PoolSize(0), sandbox.PoolMaxIdle(0), sandbox.PoolSandboxOptions(sandbox.WithMemory(1)),
	} {
		_, err := sandbox.NewPool(ctx, opt)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	}
}

func TestPoolBadImage(t *testing.T) {
	t.Parallel()
	p := newPool(t, sandbox.PoolSandboxOptions(sandbox.WithImage("dockersandbox-test/no-such-image:1")))
	require.Eventually(t, func() bool { return p.Err() != nil }, time.Minute, 20*time.Millisecond)
	assert.ErrorIs(t, p.Err(), sandbox.ErrImageNotFound)
	_, err := p.Get(testCtx(t))
	assert.ErrorIs(t, err, sandbox.ErrImageNotFound)
}
