package integration

import (
	"crypto/rand"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ids returns the IDs of list, sorted.
func ids(list []sandbox.Info) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}

// dyingOwner returns the owner label of a live process of this host and a
// function that ends it. A sandbox made with it is started before its
// owner dies: a created container of a dead owner would be taken as
// abandoned by the sweep of any New running beside it.
func dyingOwner(t *testing.T) (owner string, kill func()) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	require.NoError(t, cmd.Start())
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	host, err := os.Hostname()
	require.NoError(t, err)
	return host + ":" + strconv.Itoa(cmd.Process.Pid), kill
}

// Two programs share the daemon: each lists and prunes only what it made,
// by owner or by label, and the criteria of a Filter combine with AND.
// Pruning one program's sandboxes leaves the other's running.
func TestScopedListAndPrune(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	run := rand.Text()[:10] // this run's own names: other tests share the daemon
	const app = "dockersandbox-filter-test"
	progA, progB := "prog-a-"+run, "prog-b-"+run
	mk := func(owner, role string) *sandbox.Sandbox {
		return newSandbox(t, testenv.BusyboxImage, sandbox.WithOwner(owner), sandbox.WithNetworkMode("none"),
			sandbox.WithLabels(map[string]string{app: run, "role": role}))
	}
	a1, a2 := mk(progA, "web"), mk(progA, "db")
	b1 := mk(progB, "web")
	owner, kill := dyingOwner(t)
	orphan := mk(owner, "web")
	kill() // its creator is gone
	all := []string{a1.ID(), a2.ID(), b1.ID(), orphan.ID()}
	slices.Sort(all)
	sorted := func(s ...string) []string { slices.Sort(s); return s }

	list, err := sandbox.List(ctx, sandbox.Filter{Labels: map[string]string{app: run}}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, all, ids(list), "by label: this run's four")
	for _, s := range list {
		assert.Equal(t, run, s.Labels[app], "Info carries the labels")
		assert.Equal(t, "running", s.State)
		assert.WithinDuration(t, time.Now(), s.Created, 2*time.Minute)
	}
	list, err = sandbox.List(ctx, sandbox.Filter{Owner: progA}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, sorted(a1.ID(), a2.ID()), ids(list), "by owner")
	list, err = sandbox.List(ctx, sandbox.Filter{Labels: map[string]string{app: run, "role": "web"}}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, sorted(a1.ID(), b1.ID(), orphan.ID()), ids(list), "two labels: both must hold")
	list, err = sandbox.List(ctx, sandbox.Filter{Owner: progA, Labels: map[string]string{"role": "web"}}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{a1.ID()}, ids(list), "owner AND label")
	list, err = sandbox.List(ctx, sandbox.Filter{Labels: map[string]string{app: ""}, Owner: progB}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{b1.ID()}, ids(list), "a label with any value")
	list, err = sandbox.List(ctx, sandbox.Filter{Labels: map[string]string{app: run}, OlderThan: time.Hour}, onEngine()...)
	require.NoError(t, err)
	assert.Empty(t, list, "label AND age: none is an hour old")
	list, err = sandbox.List(ctx, sandbox.Filter{Labels: map[string]string{app: run}, DeadOwners: true}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{orphan.ID()}, ids(list), "label AND dead owner")
	list, err = sandbox.List(ctx, sandbox.Filter{}, onEngine()...)
	require.NoError(t, err)
	assert.Subset(t, ids(list), all, "the zero Filter lists every sandbox")

	// Program B cleans up after itself: A's sandboxes and the orphan stay.
	removed, err := sandbox.Prune(ctx, sandbox.Filter{Owner: progB}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{b1.ID()}, removed)
	_, err = b1.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrGone)
	for _, sb := range []*sandbox.Sandbox{a1, a2, orphan} {
		res, err := sb.Execute(ctx, "echo alive")
		require.NoError(t, err)
		assert.Equal(t, "alive\n", res.Output, "%s is untouched", sb.ID())
	}
	// Orphans of this run only: not A's, not another program's.
	removed, err = sandbox.Prune(ctx, sandbox.Filter{Labels: map[string]string{app: run}, DeadOwners: true}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{orphan.ID()}, removed)
	// A's database only.
	removed, err = sandbox.Prune(ctx, sandbox.Filter{Owner: progA, Labels: map[string]string{"role": "db"}}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{a2.ID()}, removed)
	list, err = sandbox.List(ctx, sandbox.Filter{Labels: map[string]string{app: run}}, onEngine()...)
	require.NoError(t, err)
	assert.Equal(t, []string{a1.ID()}, ids(list))
}

// A Filter with a bad value, and Prune without a criterion, fail with
// ErrInvalidOption before anything is removed.
func TestFilterInvalid(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	for name, f := range map[string]sandbox.Filter{
		"negative age":   {OlderThan: -time.Second},
		"empty label":    {Labels: map[string]string{"": "x"}},
		"all and owner":  {All: true, Owner: "x"},
		"all and labels": {All: true, Labels: map[string]string{"a": "b"}},
	} {
		_, err := sandbox.List(ctx, f, onEngine()...)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "List: %s", name)
		_, err = sandbox.Prune(ctx, f, onEngine()...)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "Prune: %s", name)
	}
	_, err := sandbox.Prune(ctx, sandbox.Filter{}, onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "the zero Filter would remove everything")
	assert.Equal(t, "owner=x label:a=1 label:b= older-than=1h0m0s dead-owners",
		sandbox.Filter{Owner: "x", Labels: map[string]string{"b": "", "a": "1"}, OlderThan: time.Hour, DeadOwners: true}.String())
	assert.Equal(t, "all", sandbox.Filter{}.String())
}
