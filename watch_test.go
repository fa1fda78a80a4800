//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextEvent waits for an event matching want, skipping others, within 20 s.
func nextEvent(t *testing.T, w *sandbox.Watcher, want func(sandbox.WatchEvent) bool) sandbox.WatchEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			require.True(t, ok, "the watch ended: %v", w.Err())
			if want(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no such event within 20 s")
		}
	}
}

func is(op sandbox.WatchOp, path string) func(sandbox.WatchEvent) bool {
	return func(ev sandbox.WatchEvent) bool { return ev.Op == op && ev.Path == path }
}

// TestWatch sees creates, writes, renames and removes, in new directories
// too, under names that are not UTF-8; a burst of 10,000 events that the
// consumer does not read overflows (and says so) without blocking other
// calls; the watch ends with its context.
func TestWatch(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
		dir := testDir(t)
		mustSh(t, sb, "mkdir -p "+dir+"/old")
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		w, err := sb.Watch(ctx, dir, true)
		require.NoError(t, err)

		mustWrite(t, sb, dir+"/a.txt", "one")
		ev := nextEvent(t, w, is(sandbox.WatchCreate, dir+"/a.txt"))
		assert.False(t, ev.IsDir)
		mustSh(t, sb, "echo more >> "+dir+"/a.txt")
		nextEvent(t, w, is(sandbox.WatchWrite, dir+"/a.txt"))
		mustSh(t, sb, "mv "+dir+"/a.txt "+dir+"/b.txt")
		nextEvent(t, w, is(sandbox.WatchRename, dir+"/a.txt"))
		nextEvent(t, w, is(sandbox.WatchCreate, dir+"/b.txt"))
		mustSh(t, sb, "rm "+dir+"/b.txt")
		nextEvent(t, w, is(sandbox.WatchRemove, dir+"/b.txt"))

		// Directories below, old and new.
		mustSh(t, sb, "touch "+dir+"/old/x")
		nextEvent(t, w, is(sandbox.WatchCreate, dir+"/old/x"))
		mustSh(t, sb, "mkdir -p "+dir+"/new/deeper && touch "+dir+"/new/deeper/y")
		ev = nextEvent(t, w, is(sandbox.WatchCreate, dir+"/new"))
		assert.True(t, ev.IsDir)
		ev = nextEvent(t, w, is(sandbox.WatchCreate, dir+"/new/deeper/y"))
		assert.False(t, ev.IsDir, "a file after a directory in the same batch")
		mustSh(t, sb, "touch "+dir+"/new/deeper/z")
		nextEvent(t, w, is(sandbox.WatchCreate, dir+"/new/deeper/z"))

		// A name that is not UTF-8, byte for byte.
		mustSh(t, sb, "touch "+dir+"/\"$(printf 'bad\\377')\"")
		nextEvent(t, w, is(sandbox.WatchCreate, dir+"/bad\xff"))

		// A burst nobody reads: dropped, reported, nothing blocked.
		mustSh(t, sb, "mkdir "+dir+"/burst")
		nextEvent(t, w, is(sandbox.WatchCreate, dir+"/burst"))
		start := time.Now()
		mustSh(t, sb, "cd "+dir+"/burst && i=0; while [ $i -lt 10000 ]; do : > f$i; i=$((i+1)); done")
		mustSh(t, sb, "true") // other calls go on
		t.Logf("10,000 files made and a command run while the watch was not read: %v", time.Since(start))
		var creates, overflows int
		for done := false; !done; {
			select {
			case ev := <-w.Events():
				switch {
				case ev.Op == sandbox.WatchOverflow:
					overflows++
				case ev.Op == sandbox.WatchCreate && strings.HasPrefix(ev.Path, dir+"/burst/"):
					creates++
				}
			case <-time.After(2 * time.Second):
				done = true
			}
		}
		t.Logf("after the burst: %d creates, %d overflow events", creates, overflows)
		assert.Positive(t, overflows, "no overflow reported")
		assert.Less(t, creates, 10000)
		// It still works.
		mustSh(t, sb, "touch "+dir+"/after")
		nextEvent(t, w, is(sandbox.WatchCreate, dir+"/after"))

		// Ended by its context.
		cancel()
		timeout := time.After(10 * time.Second)
		for open := true; open; {
			select {
			case _, open = <-w.Events():
			case <-timeout:
				t.Fatal("Events not closed 10 s after the context ended")
			}
		}
		require.ErrorIs(t, w.Err(), context.Canceled)

		// A missing path; Close.
		_, err = sb.Watch(testCtx(t), dir+"/missing", false)
		require.ErrorIs(t, err, fs.ErrNotExist)
		var pe *fs.PathError
		require.True(t, errors.As(err, &pe))
		w2, err := sb.Watch(testCtx(t), dir, false)
		require.NoError(t, err)
		require.NoError(t, w2.Close())
		for range w2.Events() {
		}
		require.NoError(t, w2.Err())

		// The watched path goes away: its event, then the end, without error.
		mustSh(t, sb, "mkdir "+dir+"/gone")
		w3, err := sb.Watch(testCtx(t), dir+"/gone", false)
		require.NoError(t, err)
		mustSh(t, sb, "rmdir "+dir+"/gone")
		var last []sandbox.WatchEvent
		timeout = time.After(20 * time.Second)
		for open := true; open; {
			select {
			case ev, ok := <-w3.Events():
				if open = ok; ok {
					last = append(last, ev)
				}
			case <-timeout:
				t.Fatal("the watch of a removed directory did not end")
			}
		}
		require.NoError(t, w3.Err())
		assert.Contains(t, last, sandbox.WatchEvent{Path: dir + "/gone", Op: sandbox.WatchRemove})
	})
}
