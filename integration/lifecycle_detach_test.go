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

// Detach lets go of a handle and leaves the container running with its
// files; Close after Detach leaves it alone; another handle
// takes it over and its Close removes it.
func TestDetach(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	mustWrite(t, sb, "kept.txt", "still here")
	id := sb.ID()
	t.Cleanup(func() { // whatever happens below, nothing is left behind
		if testenv.SandboxExists(t, id) {
			if h, err := sandbox.Attach(context.Background(), id, onEngine()...); err == nil {
				h.Close()
			}
		}
	})

	// A call in flight on the shared channel ends with ErrClosed.
	inFlight := make(chan error, 1)
	go func() {
		_, err := sb.Execute(ctx, "sleep 30")
		inFlight <- err
	}()
	time.Sleep(300 * time.Millisecond)

	sb.Detach()
	select {
	case err := <-inFlight:
		assert.ErrorIs(t, err, sandbox.ErrClosed)
	case <-time.After(20 * time.Second):
		t.Fatal("a call in flight outlived Detach")
	}
	_, err := sb.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrClosed)
	_, err = sb.Stat(ctx, "kept.txt")
	assert.ErrorIs(t, err, sandbox.ErrClosed)
	require.NoError(t, sb.Close(), "Close after Detach")
	sb.Detach() // again: nothing
	require.True(t, testenv.SandboxExists(t, id), "Detach or the Close after it touched the container")

	other, err := sandbox.Attach(ctx, id, onEngine()...)
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	got, err := other.FS(ctx).ReadFile("workspace/kept.txt")
	require.NoError(t, err)
	assert.Equal(t, "still here", string(got))

	// An attached handle's Detach leaves the container too; Close removes it.
	again, err := sandbox.Attach(ctx, id, onEngine()...)
	require.NoError(t, err)
	again.Detach()
	require.True(t, testenv.SandboxExists(t, id))
	require.NoError(t, other.Close())
	assert.False(t, testenv.SandboxExists(t, id), "Close on an attached handle removes the container")
}

// Detach after Close does nothing: the container is removed all the same.
func TestDetachAfterClose(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	id := sb.ID()
	require.NoError(t, sb.Close())
	sb.Detach()
	assert.NoError(t, sb.Close())
	assert.False(t, testenv.SandboxExists(t, id))
	_, err := sb.Execute(context.Background(), "true")
	assert.ErrorIs(t, err, sandbox.ErrClosed)
}
