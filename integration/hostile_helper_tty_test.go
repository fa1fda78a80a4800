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

// Whatever a replaced helper does with terminals, a command on one
// cannot hang the caller: a helper that predates terminals (its hello
// does not say it has them) is refused at Start with ErrProtocolVersion,
// before the command runs without one; a helper that sends resize frames
// (which only the library sends), small or 1 MiB, fails the call with
// ErrHelper; one that stops reading lets Resize and Wait return by their
// context's deadline.
func TestTTYHostileHelper(t *testing.T) {
	skipInShort(t)
	t.Parallel()
	skipReplacedHelperOnPodman(t)
	cli := testenv.BackdoorClient(t)
	helper := toolBinary(t, "internal/testenv/hostilehelper")
	concurrently(t, []string{"hello-only", "tty-resize", "tty-garbage", "tty-deaf"}, func(m string) string { return m }, func(t *testing.T, mode string) {
		sb := hostileSandbox(t, cli, testenv.BusyboxImage)
		installHostile(t, cli, sb.ID(), helper, mode)
		ctx, cancel := context.WithTimeout(context.Background(), hostileDeadline)
		defer cancel()
		cmd := sb.Command(ctx, "sh")
		cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		defer in.Close()
		r := runTimed(hostileDeadline+time.Second+hostileSlack+overdue, func() error {
			if err := cmd.Start(); err != nil {
				return err
			}
			for i := range 1000 {
				if err := cmd.Resize(ctx, 10+i%50, 20+i%50); err != nil {
					break
				}
			}
			return cmd.Wait()
		})
		r.within(t, "a command on a terminal", hostileDeadline+time.Second+hostileSlack)
		switch mode {
		case "hello-only":
			assert.ErrorIs(t, r.err, sandbox.ErrProtocolVersion)
		case "tty-deaf":
			assert.Error(t, r.err)
		default:
			assert.ErrorIs(t, r.err, sandbox.ErrHelper)
		}
	})
}

// A command flooding its terminal costs the host bounded memory: while
// the reader does not read for 4 s (the command waits for it; the pipe
// holds 64 KiB) the live heap grows by less than 16 MiB (a buffer without
// bound would hold what the command wrote meanwhile, 32 MB at ~8 MB/s),
// and while 64 MiB then pass the heap in use grows by less than 32 MiB,
// garbage the collector has not yet reached on two busy cores included.
// Not parallel: other tests' allocations would count.
func TestTTYFloodBounded(t *testing.T) {
	skipInShort(t)
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	const total = 64 << 20
	liveBase := testenv.LiveHeap()
	stopHeap := testenv.WatchHeap(16 << 20)
	cmd := sb.Command(ctx, "head -c 67108864 /dev/zero")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	time.Sleep(4 * time.Second) // nobody reads: the command waits
	held := testenv.LiveHeap() - liveBase
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := out.Read(buf)
		n += k
		if err != nil {
			break
		}
	}
	require.NoError(t, cmd.Wait())
	base, peak := stopHeap()
	assert.Equal(t, total, n, "all the output came")
	assert.Less(t, held, int64(16<<20), "live heap grew while nobody read")
	assert.Less(t, int64(peak)-int64(base), int64(32<<20), "heap in use grew while 64 MiB flowed")
	t.Logf("64 MiB through a terminal: %d KiB live after 4 s unread; heap in use %d MiB before, peak %d MiB", held>>10, base>>20, peak>>20)
}
