//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
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
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
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
		// Drain until a marker made after the burst arrives: events keep
		// their order, so by then every burst event was delivered or
		// reported dropped. A marker made while the helper's queue is still
		// full is dropped too, so a new one is made each half second of
		// silence; a stall of the loaded machine only slows this down.
		var creates, overflows, markers int
		drained := time.After(2 * time.Minute)
		for done := false; !done; {
			select {
			case ev, ok := <-w.Events():
				require.True(t, ok, "the watch ended during the burst: %v", w.Err())
				switch {
				case ev.Op == sandbox.WatchOverflow:
					overflows++
				case ev.Op == sandbox.WatchCreate && strings.HasPrefix(ev.Path, dir+"/burst/"):
					creates++
				case ev.Op == sandbox.WatchCreate && strings.HasPrefix(ev.Path, dir+"/mark"):
					done = true
				}
			case <-time.After(500 * time.Millisecond):
				markers++
				mustSh(t, sb, fmt.Sprintf("touch %s/mark%d", dir, markers))
			case <-drained:
				t.Fatalf("no marker event within 2 min of the burst (%d creates, %d overflow events, %d markers)", creates, overflows, markers)
			}
		}
		t.Logf("after the burst: %d creates, %d overflow events, %d markers", creates, overflows, markers)
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
