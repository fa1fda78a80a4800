//go:build linux

package integration

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamMemory bounds what a hostile helper's stream may make the host's
// heap grow by (a stream's window is 1 MiB; the attacks send 64 MiB and
// more).
const streamMemory = 32 << 20

// A replaced helper that floods a stream beyond its credit, sends frames
// for streams that do not exist, or predates streams costs the host a
// bounded amount of memory and time, and fails clearly. Not parallel: it
// measures the heap.
func TestHostileHelperStreams(t *testing.T) {
	skipInShort(t)
	skipReplacedHelperOnPodman(t)
	cli := testenv.BackdoorClient(t)
	helper := toolBinary(t, "internal/testenv/hostilehelper")
	heap := testenv.LiveHeap
	bounded := func(t *testing.T, what string, before int64) {
		grew := heap() - before
		t.Logf("%s: the heap grew by %d KiB", what, grew>>10)
		assert.Less(t, grew, int64(streamMemory), "%s: host heap", what)
	}
	healthy := newSandbox(t, testenv.BusyboxImage)

	t.Run("flood/dial", func(t *testing.T) {
		sb := hostileSandbox(t, cli, testenv.BusyboxImage)
		installHostile(t, cli, sb.ID(), helper, "stream-flood")
		before := heap()
		c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:80")
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
		// The lie shows once the flood outruns the reader: the library
		// counts a grant as given when it sends it, so a reader as fast
		// as the flood never sees more than it granted (and holds no more
		// either). It starts reading after the flood filled the window.
		time.Sleep(2 * time.Second)
		r := runTimed(20*time.Second, func() error { _, err := io.Copy(io.Discard, c); return err })
		r.within(t, "reading a stream flooded beyond its credit", 20*time.Second)
		require.ErrorIs(t, r.err, sandbox.ErrHelper)
		require.False(t, errors.Is(r.err, os.ErrDeadlineExceeded), "the flood was read, not refused")
		bounded(t, "dial flood", before)
		_, err = healthy.Execute(testCtx(t), "true")
		require.NoError(t, err)
	})

	t.Run("flood/watch", func(t *testing.T) {
		sb := hostileSandbox(t, cli, testenv.BusyboxImage)
		installHostile(t, cli, sb.ID(), helper, "stream-flood")
		before := heap()
		w, err := sb.Watch(testCtx(t), "/tmp", true)
		require.NoError(t, err)
		defer w.Close()
		// A consumer that does not read: the flood stops at the credit.
		time.Sleep(3 * time.Second)
		bounded(t, "watch flood, unread", before)
		r := runTimed(20*time.Second, func() error {
			for range w.Events() {
			}
			return w.Err()
		})
		r.within(t, "draining a flooded watch", 20*time.Second)
		require.ErrorIs(t, r.err, sandbox.ErrHelper)
		bounded(t, "watch flood", before)
	})

	t.Run("unknown", func(t *testing.T) {
		sb := hostileSandbox(t, cli, testenv.BusyboxImage)
		installHostile(t, cli, sb.ID(), helper, "stream-unknown")
		before := heap()
		c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:80")
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
		r := runTimed(30*time.Second, func() error { _, err := io.Copy(io.Discard, c); return err })
		r.within(t, "a stream beside 64 MiB for unknown streams", 30*time.Second)
		require.NoError(t, r.err, "the stream's clean end")
		bounded(t, "frames for unknown streams", before)
		_, err = sb.Execute(testCtx(t), "true") // the channel still answers
		require.NoError(t, err)
	})

	// A helper that claims a direct connection (over the port socket) it
	// did not make, or made with a token that is not the dial's, gets a
	// clear error at once: the library never reads another dial's
	// connection, nor waits for one that does not come.
	for _, mode := range []string{"direct-lie", "direct-wrong"} {
		t.Run(mode, func(t *testing.T) {
			sb := hostileSandbox(t, cli, testenv.BusyboxImage)
			installHostile(t, cli, sb.ID(), helper, mode)
			for range 3 {
				r := runTimed(5*time.Second, func() error {
					c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:80")
					if err == nil {
						c.Close()
					}
					return err
				})
				r.within(t, "a dial whose helper lies about its direct connection", 5*time.Second)
				require.ErrorIs(t, r.err, sandbox.ErrHelper)
				require.ErrorContains(t, r.err, "direct connection it did not make")
			}
			_, err := sb.Execute(testCtx(t), "true") // the channel still answers
			require.NoError(t, err)
		})
	}

	t.Run("old", func(t *testing.T) {
		sb := hostileSandbox(t, cli, testenv.BusyboxImage)
		installHostile(t, cli, sb.ID(), helper, "stream-old")
		_, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:80")
		require.ErrorIs(t, err, sandbox.ErrProtocolVersion)
		_, err = sb.Watch(testCtx(t), "/tmp", false)
		require.ErrorIs(t, err, sandbox.ErrProtocolVersion)
	})
}
