package helper

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sync"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
	"golang.org/x/sys/unix"
)

// watchQueue bounds the events a watch holds while the library grants no
// credit; more are dropped and an overflow event says so.
const watchQueue = 1024

// watchMask: the inotify events a watch reports.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_EXCL_UNLINK

// watcher is one watch's inotify instance and queue.
type watcher struct {
	fd        int
	recursive bool
	root      int              // the root's watch descriptor
	paths     map[int32]string // watch descriptor → path (reader goroutine only)

	mu       sync.Mutex
	queue    []proto.WatchEvent
	overflow bool // events were dropped since the last overflow event was queued
	ended    bool // the root is gone: no more events
	wake     chan struct{}
}

// watch streams inotify events on req.Path (and, recursive, every
// directory below it, including new ones) until the library cancels, the
// root goes away, or the stream fails.
func (t *streamTable) watch(ctx context.Context, id uint32, req proto.Request, send func(proto.Kind, []byte) error) *proto.Result {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return &proto.Result{Error: proto.ErrorOf(os.NewSyscallError("inotify_init1", err))}
	}
	f := os.NewFile(uintptr(fd), "inotify") // reads through the poller: Close ends them
	defer f.Close()
	w := &watcher{fd: fd, recursive: req.Recursive, paths: map[int32]string{}, wake: make(chan struct{}, 1)}
	wd, err := unix.InotifyAddWatch(fd, req.Path, watchMask)
	if err != nil {
		return &proto.Result{Error: proto.ErrorOf(&fs.PathError{Op: "watch", Path: req.Path, Err: err})}
	}
	w.root, w.paths[int32(wd)] = wd, req.Path
	if req.Recursive {
		w.addBelow(req.Path, false)
	}
	st, sctx := t.open(ctx, id, req.Op, send)
	defer t.remove(id)
	if err := send(proto.KindOpen, nil); err != nil {
		return &proto.Result{Error: proto.ErrorOf(err)}
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		w.read(f)
	}()
	err = w.send(sctx, st)
	f.Close()
	<-read
	if err == nil || errors.Is(err, context.Canceled) {
		return &proto.Result{}
	}
	return &proto.Result{Error: &proto.Error{Code: proto.CodeInternal, Message: err.Error()}}
}

// push queues an event, or drops it when the queue is full.
func (w *watcher) push(ev proto.WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.overflow && len(w.queue) < watchQueue {
		w.queue = append(w.queue, proto.WatchEvent{Op: proto.WatchOverflow})
		w.overflow = false
	}
	if ev.Op == proto.WatchOverflow || len(w.queue) >= watchQueue {
		w.overflow = true
	} else {
		w.queue = append(w.queue, ev)
	}
	poke(w.wake)
}

// read reads inotify events until f is closed.
func (w *watcher) read(f *os.File) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			l := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			if start+l > n {
				break
			}
			name := string(bytes.TrimRight(buf[start:start+l], "\x00"))
			off = start + l
			w.event(wd, mask, name)
		}
	}
}

// event turns one inotify event into queued events.
func (w *watcher) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.push(proto.WatchEvent{Op: proto.WatchOverflow})
		return
	}
	dir, ok := w.paths[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.paths, wd)
		if int(wd) == w.root {
			w.mu.Lock()
			w.ended = true
			poke(w.wake)
			w.mu.Unlock()
		}
		return
	}
	p := dir
	if name != "" {
		p = join(dir, name)
	}
	isDir := mask&unix.IN_ISDIR != 0
	ev := proto.WatchEvent{Path: fsops.RawString(p), Dir: isDir}
	switch {
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
		ev.Op = proto.WatchCreate
		w.push(ev)
		if isDir && w.recursive {
			w.addTree(p)
		}
	case mask&unix.IN_MODIFY != 0:
		ev.Op = proto.WatchWrite
		w.push(ev)
	case mask&unix.IN_DELETE != 0:
		ev.Op = proto.WatchRemove
		w.push(ev)
	case mask&unix.IN_MOVED_FROM != 0:
		ev.Op = proto.WatchRename
		w.push(ev)
	case mask&unix.IN_DELETE_SELF != 0 && int(wd) == w.root:
		ev.Op = proto.WatchRemove
		w.push(ev)
	case mask&unix.IN_MOVE_SELF != 0 && int(wd) == w.root:
		ev.Op = proto.WatchRename
		w.push(ev)
	}
}

// addTree watches the new directory p and everything below it, queueing
// a create event for what is already there (made before the watch was).
func (w *watcher) addTree(p string) {
	wd, err := unix.InotifyAddWatch(w.fd, p, watchMask|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) { // out of watches: events will be missed
			w.push(proto.WatchEvent{Op: proto.WatchOverflow})
		}
		return
	}
	w.paths[int32(wd)] = p
	w.addBelow(p, true)
}

// addBelow watches the directories below p, queueing create events for
// its entries when emit is set.
func (w *watcher) addBelow(p string, emit bool) {
	entries, err := os.ReadDir(p)
	if err != nil {
		return
	}
	for _, e := range entries {
		c := join(p, e.Name())
		if emit {
			w.push(proto.WatchEvent{Path: fsops.RawString(c), Op: proto.WatchCreate, Dir: e.IsDir()})
		}
		if !e.IsDir() {
			continue
		}
		wd, err := unix.InotifyAddWatch(w.fd, c, watchMask|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
		if err != nil {
			if errors.Is(err, unix.ENOSPC) {
				w.push(proto.WatchEvent{Op: proto.WatchOverflow})
				return
			}
			continue
		}
		w.paths[int32(wd)] = c
		w.addBelow(c, emit)
	}
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// send sends queued events in batches within credit until ctx ends or the
// root is gone and the queue is empty.
func (w *watcher) send(ctx context.Context, st *hstream) error {
	var batch []byte
	for {
		w.mu.Lock()
		if len(w.queue) == 0 && w.overflow {
			w.queue = append(w.queue, proto.WatchEvent{Op: proto.WatchOverflow})
			w.overflow = false
		}
		if len(w.queue) == 0 {
			ended := w.ended
			w.mu.Unlock()
			if ended {
				return nil
			}
			select {
			case <-w.wake:
				continue
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		first, _ := json.Marshal(w.queue[0])
		w.mu.Unlock()
		// Wait for room for at least the first event (a few KiB at most,
		// well within a quarter window).
		n, err := st.take(ctx, len(first)+2, proto.StreamChunk)
		if err != nil {
			return err
		}
		w.mu.Lock()
		var k int
		batch, k = fillBatch(batch, w.queue, n)
		clear(w.queue[:k])
		w.queue = append(w.queue[:0], w.queue[k:]...)
		w.mu.Unlock()
		st.giveBack(n - len(batch))
		if err := st.send(proto.KindData, batch); err != nil {
			return err
		}
	}
}

// fillBatch writes into batch (reused) a JSON array of the first events of
// queue that fit in n bytes, brackets and commas included, and says how
// many it took. (It once counted one byte short of the comma: a batch
// that filled its credit exactly sent a byte beyond it, which breaks the
// channel.)
func fillBatch(batch []byte, queue []proto.WatchEvent, n int) ([]byte, int) {
	batch = append(batch[:0], '[')
	k := 0
	for ; k < len(queue); k++ {
		b, _ := json.Marshal(queue[k])
		sep := 0
		if k > 0 {
			sep = 1
		}
		if len(batch)+sep+len(b)+1 > n { // and the closing bracket
			break
		}
		if k > 0 {
			batch = append(batch, ',')
		}
		batch = append(batch, b...)
	}
	return append(batch, ']'), k
}
