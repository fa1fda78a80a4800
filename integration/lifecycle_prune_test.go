//go:build linux

package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"crypto/rand"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// orphanLabel marks the sandboxes of TestPruneDeadOwners's children, with
// the run's value from orphanRunEnv.
const (
	orphanLabel  = "dockersandbox-test-orphan-run"
	orphanRunEnv = "DOCKERSANDBOX_TEST_ORPHAN_RUN"
)

// Prune removes the sandboxes whose owner process died (here: killed, so
// that its sandbox, without idle timeout or lifetime, lives on); so does
// the CLI's `sandbox prune -dead-owners`. Sandboxes of live owners stay.
func TestPruneDeadOwners(t *testing.T) {
	mine := newSandbox(t, testenv.BusyboxImage) // a live owner's: kept
	run := rand.Text()[:10]
	t.Setenv(orphanRunEnv, run) // the children label their sandboxes with it
	scope := map[string]string{orphanLabel: run}
	orphan := func(t *testing.T) string {
		cmd, id := startChild(t, "orphan")
		killChild(t, cmd)
		time.Sleep(time.Second)
		require.True(t, running(t, id), "without a lifetime or idle timeout, the orphan lives on")
		return id
	}

	t.Run("API", func(t *testing.T) {
		id := orphan(t)
		removed, err := sandbox.Prune(testCtx(t), sandbox.Filter{DeadOwners: true, Labels: scope}, onEngine()...)
		require.NoError(t, err)
		assert.Contains(t, removed, id)
		assert.NotContains(t, removed, mine.ID())
		waitGone(t, id)
	})

	t.Run("CLI", func(t *testing.T) {
		testenv.RequireDocker(t, "the CLI (cmd/sandbox) reaches Docker from the environment: it has no engine flag yet")
		bin := filepath.Join(t.TempDir(), "sandbox")
		out, err := exec.Command("go", "build", "-o", bin, "../cmd/sandbox").CombinedOutput()
		require.NoError(t, err, "build the CLI: %s", out)
		id := orphan(t)
		out, err = exec.Command(bin, "prune", "-dead-owners", "-label", orphanLabel+"="+run, "-json").Output()
		require.NoError(t, err, "sandbox prune: %s", out)
		var removed []string
		require.NoError(t, json.Unmarshal(out, &removed), "%s", out)
		assert.Contains(t, removed, id)
		assert.NotContains(t, removed, mine.ID())
		waitGone(t, id)
	})

	assert.True(t, running(t, mine.ID()))
}

// Prune(Filter{OlderThan: d}) removes the sandboxes created before the age and keeps
// the others. It runs on a private daemon: on the shared one it would
// remove other tests' sandboxes.
func TestPruneOlderThan(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	opts := sandboxOptions(testenv.BusyboxImage, sandbox.WithClient(d.cli), sandbox.WithNetworkMode("none"))
	old, err := sandbox.New(ctx, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { old.Close() })
	// The creation label counts whole seconds, and is stamped before the
	// container is made: ages are only good to a second or two.
	time.Sleep(8 * time.Second)
	youngStart := time.Now()
	young, err := sandbox.New(ctx, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { young.Close() })
	// On a loaded machine New takes seconds: the threshold is the young
	// one's age (from before its New) plus a margin, which the old one
	// (8 s and its own New older) exceeds.
	olderThan := time.Since(youngStart).Round(time.Second) + 3*time.Second

	_, err = sandbox.Prune(ctx, sandbox.Filter{OlderThan: -time.Second}, sandbox.WithClient(d.cli))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	_, err = sandbox.Prune(ctx, sandbox.Filter{}, sandbox.WithClient(d.cli))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "Prune needs a selection")

	removed, err := sandbox.Prune(ctx, sandbox.Filter{OlderThan: olderThan}, sandbox.WithClient(d.cli))
	require.NoError(t, err)
	assert.Equal(t, []string{old.ID()}, removed)
	_, err = old.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrGone)
	res, err := young.Execute(ctx, "echo alive")
	require.NoError(t, err)
	assert.Equal(t, "alive\n", res.Output)
	assert.NoError(t, old.Close(), "Close of a pruned sandbox")
}
