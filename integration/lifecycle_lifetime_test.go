package integration

import (
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitEnded waits until the sandbox's container no longer runs.
func waitEnded(t *testing.T, id string, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := engineState(t, id)
		return st != "running" && st != "paused"
	}, within, 50*time.Millisecond, "the sandbox did not end within %v", within)
}

// TestLifetimeExtend: a lifetime extended before it ends keeps the sandbox
// past the old end; the values read back, also from an Attach handle.
func TestLifetimeExtend(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		l, err := sb.Lifetimes(ctx)
		require.NoError(t, err)
		assert.Equal(t, sandbox.Lifetimes{Lifetime: 3 * time.Second, IdleTimeout: time.Hour}, l)
		require.NoError(t, sb.SetLifetime(ctx, time.Minute))
		time.Sleep(5 * time.Second) // past the old end
		assert.Equal(t, "alive", mustSh(t, sb, "echo alive"))
		other, err := sandbox.Attach(ctx, sb.ID(), onEngine()...)
		require.NoError(t, err)
		defer other.Detach()
		l, err = other.Lifetimes(ctx)
		require.NoError(t, err)
		assert.Equal(t, sandbox.Lifetimes{Lifetime: time.Minute, IdleTimeout: time.Hour}, l)
		require.NoError(t, other.SetIdleTimeout(ctx, 0))
		l, err = sb.Lifetimes(ctx)
		require.NoError(t, err)
		assert.Equal(t, sandbox.Lifetimes{Lifetime: time.Minute}, l)
	}, sandbox.WithLifetime(3*time.Second), sandbox.WithIdleTimeout(time.Hour))
}

// TestLifetimeShorten: a lifetime shortened below the time already run, or
// an idle timeout set on a sandbox that had none, ends the sandbox at once
// (and the engine removes it: it was made with a lifetime).
func TestLifetimeShorten(t *testing.T) {
	t.Parallel()
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			sb := newSandbox(t, image, sandbox.WithLifetime(time.Hour))
			time.Sleep(time.Second)
			start := time.Now()
			require.NoError(t, sb.SetLifetime(ctx, 500*time.Millisecond))
			waitEnded(t, sb.ID(), 5*time.Second)
			t.Logf("ended %v after the change", time.Since(start))
			_, err := sb.Execute(ctx, "true")
			assert.ErrorIs(t, err, sandbox.ErrGone)

			idle := newSandbox(t, image, sandbox.WithAutoRemove(false))
			defer removeContainer(t, idle.ID())
			require.NoError(t, idle.SetIdleTimeout(ctx, time.Second))
			waitEnded(t, idle.ID(), 10*time.Second)
			assert.ErrorIs(t, idle.SetLifetime(ctx, -time.Second), sandbox.ErrInvalidOption)
		})
	}
}

// TestLifetimePaused: time spent paused counts for neither the lifetime
// nor the idle timeout; the lifetime goes on after the resume.
func TestLifetimePaused(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithLifetime(4*time.Second), sandbox.WithIdleTimeout(2*time.Second))
	ctx := testCtx(t)
	start := time.Now()
	require.NoError(t, sb.Pause(ctx))
	time.Sleep(6 * time.Second) // past both limits
	require.NoError(t, sb.Resume(ctx))
	assert.Equal(t, "alive", mustSh(t, sb, "echo alive"))
	waitEnded(t, sb.ID(), 8*time.Second)
	assert.Greater(t, time.Since(start), 8*time.Second, "the lifetime counted the pause")
}
