package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// The calls that connect to the engine of their own (New, Attach, List,
// Prune, ListSnapshots, Snapshot.Remove) with a context that
// has ended say so: errors.Is(err, context.Canceled), whatever else the
// error says (the engine unreachable: its ping was cancelled).
func TestCancelledConnect(t *testing.T) {
	testenv.RequireDocker(t, "a call connects of its own to the Docker API only (a relayed engine is given)")
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	scope := sandbox.Filter{Labels: map[string]string{"com.dockersandbox.test.none": "x"}}
	calls := map[string]func() error{
		"New": func() error {
			sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage)...)
			if err == nil {
				sb.Close()
			}
			return err
		},
		"Attach": func() error {
			sb, err := sandbox.Attach(ctx, sb.ID(), onEngine()...)
			if err == nil {
				sb.Detach()
			}
			return err
		},
		"List":  func() error { _, err := sandbox.List(ctx, scope, onEngine()...); return err },
		"Prune": func() error { _, err := sandbox.Prune(ctx, scope, onEngine()...); return err },
	}
	snap, err := sb.Snapshot(testCtx(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = snap.Remove(context.Background()) })
	calls["ListSnapshots"] = func() error { _, err := sandbox.ListSnapshots(ctx, scope); return err }
	calls["Snapshot.Remove"] = func() error { return snap.Remove(ctx) }
	for name, call := range calls {
		err := call()
		require.Error(t, err, name)
		require.True(t, errors.Is(err, context.Canceled), "%s: %v", name, err)
	}
}
