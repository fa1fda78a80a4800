package tools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The session tools' bounds, attacked: 300 MB of output under a budget of
// 1,000 tokens reaches the model as ~4 KB and costs the host little
// memory; a session that ignores SIGTERM (its shell and its child) is
// still killed by kill_session; yield times outside their range are
// clamped (0 to 250 ms, 10^15 ms to 30 s for exec_command and to
// MaxPollTime for a poll). Not parallel: the heap is measured.
func TestExecToolsBounds(t *testing.T) {
	sb := sandboxtest.Busybox(t)
	a := execAgent{t: t, set: tools.NewExec(sb, tools.Options{MaxPollTime: 6 * time.Second})}

	t.Run("huge output under a budget", func(t *testing.T) {
		stopHeap := testenv.WatchHeap(16 << 20)
		r := a.reply("exec_command", "cmd", `head -c 300000000 /dev/zero | tr '\0' x; echo; echo END`,
			"yield_time_ms", 30000, "max_output_tokens", 1000)
		base, peak := stopHeap()
		if r.running { // a slow machine: collect the rest, the budget applies the same
			a.reply("kill_session", "session_id", r.session)
			t.Skip("300 MB did not pass within 30 s here")
		}
		assert.Equal(t, 0, r.code)
		assert.Less(t, len(r.output), 4000+200, "the budget bounds what the model sees")
		assert.True(t, strings.HasSuffix(r.output, "END\n"), "the tail is kept: %q", r.output[max(0, len(r.output)-50):])
		assert.Contains(t, r.output, "tokens truncated")
		assert.GreaterOrEqual(t, r.tokens, 1000, "the original count says more came")
		grew := int64(peak) - int64(base)
		t.Logf("heap in use grew by %d KiB at most (base %d KiB)", grew>>10, base>>10)
		assert.Less(t, grew, int64(32<<20), "host memory is bounded whatever the command prints")
	})

	t.Run("a session that ignores SIGTERM", func(t *testing.T) {
		r := a.reply("exec_command", "cmd", `trap '' TERM; sh -c "trap '' TERM; sleep 711" & echo ready; wait`, "yield_time_ms", 1000)
		require.True(t, r.running, r.output)
		require.Contains(t, r.output, "ready")
		start := time.Now()
		k := a.reply("kill_session", "session_id", r.session)
		assert.Equal(t, 137, k.code)
		assert.Less(t, time.Since(start), 15*time.Second)
		out, err := sb.Execute(sandboxtest.Context(t), "ps -o args | grep -c '^sleep 711$' || true")
		require.NoError(t, err)
		assert.Equal(t, "0", strings.TrimSpace(out.Output), "nothing of the session is left")
	})

	t.Run("yield times clamped", func(t *testing.T) {
		timed := func(kv ...any) (execReply, time.Duration) {
			start := time.Now()
			r := a.reply(kv[0].(string), kv[1:]...)
			return r, time.Since(start)
		}
		r, took := timed("exec_command", "cmd", "sleep 600", "yield_time_ms", 0)
		require.True(t, r.running)
		assert.GreaterOrEqual(t, took, 250*time.Millisecond, "0 is raised to 250 ms")
		assert.Less(t, took, 10*time.Second)
		id := r.session

		r, took = timed("write_stdin", "session_id", id, "yield_time_ms", 1e15)
		require.True(t, r.running)
		assert.GreaterOrEqual(t, took, 6*time.Second-100*time.Millisecond, "a poll waits up to MaxPollTime")
		assert.Less(t, took, 6*time.Second+10*time.Second, "10^15 ms is cut to MaxPollTime (6 s)")

		r, took = timed("write_stdin", "session_id", id, "yield_time_ms", 0)
		require.True(t, r.running)
		assert.GreaterOrEqual(t, took, 5*time.Second-100*time.Millisecond, "a poll waits at least 5 s")

		r, took = timed("exec_command", "cmd", "sleep 600", "yield_time_ms", 1e15)
		require.True(t, r.running)
		assert.GreaterOrEqual(t, took, 30*time.Second-100*time.Millisecond)
		assert.Less(t, took, 30*time.Second+10*time.Second, "10^15 ms is cut to 30 s")
		a.reply("kill_session", "session_id", id)
		a.reply("kill_session", "session_id", r.session)
	})
}
