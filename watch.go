package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// WatchOp is what happened to a watched path.
type WatchOp uint8

// Watch events.
const (
	// WatchCreate: a file or directory was created, or renamed to Path.
	WatchCreate WatchOp = iota + 1
	// WatchWrite: a file was written to.
	WatchWrite
	// WatchRemove: a file or directory was removed.
	WatchRemove
	// WatchRename: a file or directory was renamed away from Path (its new
	// name, if still watched, comes as a WatchCreate).
	WatchRename
	// WatchOverflow: events were dropped (a queue was full: the consumer
	// did not keep up, or the kernel's inotify queue overflowed); Path is
	// empty. Rescan what matters.
	WatchOverflow
)

func (op WatchOp) String() string {
	switch op {
	case WatchCreate:
		return "create"
	case WatchWrite:
		return "write"
	case WatchRemove:
		return "remove"
	case WatchRename:
		return "rename"
	case WatchOverflow:
		return "overflow"
	}
	return fmt.Sprintf("WatchOp(%d)", uint8(op))
}

// WatchEvent is one event of a Watch.
type WatchEvent struct {
	// Path is the absolute path in the sandbox, byte for byte (a name
	// need not be valid UTF-8).
	Path  string
	Op    WatchOp
	IsDir bool
}

// watchBuffer is how many decoded events wait in Events for the consumer.
const watchBuffer = 64

// Watch reports changes to path (a file or a directory; relative to the
// working directory unless absolute) and, when recursive, to everything
// below it, new directories included: inotify in the sandbox's helper,
// streamed over the shared channel. Events are delivered on the
// Watcher's Events channel until ctx ends, Close is called, the watched
// path itself goes away, or the sandbox's channel breaks; then Events is
// closed and Err says why.
//
// Queues are bounded on both sides (about 1,000 events in the helper, 64
// KiB of encoded events and 64 decoded ones in the library): a consumer
// that does not keep up loses events and gets a WatchOverflow event
// instead, never blocking the sandbox's other calls nor growing memory.
// A missing path is an *fs.PathError matching fs.ErrNotExist.
func (s *Sandbox) Watch(ctx context.Context, path string, recursive bool) (_ *Watcher, err error) {
	ctx, op := s.begin(ctx, "Watch")
	defer op.end(&err)
	op.path(path)
	p, err := s.abs("watch", path)
	if err != nil {
		return nil, err
	}
	st, err := s.openStream(ctx, proto.Request{Op: proto.OpWatch, Path: p, Recursive: recursive})
	if err != nil {
		return nil, err
	}
	select {
	case <-st.openC:
	default:
		if st.res == nil {
			return nil, fmt.Errorf("%w: the watch ended before it began", ErrHelper)
		}
		return nil, &fs.PathError{Op: "watch", Path: p, Err: st.res.Err()}
	}
	w := &Watcher{s: s, path: path, st: st, events: make(chan WatchEvent, watchBuffer), done: make(chan struct{})}
	go w.run(ctx)
	return w, nil
}

// Watcher is a running Watch.
type Watcher struct {
	s        *Sandbox
	path     string // as Watch was given it, for Close's record
	st       *stream
	events   chan WatchEvent
	done     chan struct{} // closed by Close
	doneOnce sync.Once
	mu       sync.Mutex
	err      error
}

// Events delivers the events; it is closed when the watch ended.
func (w *Watcher) Events() <-chan WatchEvent { return w.events }

// Err says why the watch ended, once Events is closed: ctx's error, nil
// after Close or when the watched path went away, else the failure.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close ends the watch; Events is closed soon after.
func (w *Watcher) Close() (err error) {
	op := w.s.beginDetached("Watcher.Close")
	defer op.end(&err)
	op.path(w.path)
	w.doneOnce.Do(func() { close(w.done) })
	return nil
}

// run decodes the stream's batches into Events until the watch ends.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.events)
	defer w.st.close()
	stop, finished := make(chan struct{}), make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
		case <-w.done:
		case <-finished:
		}
		close(stop)
	}()
	end := func(err error) {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
	}
	for {
		p, err := w.st.chunk(stop)
		switch {
		case errors.Is(err, errEnded), errors.Is(err, io.EOF):
			end(nil)
			return
		case err != nil:
			end(err)
			return
		}
		var batch []proto.WatchEvent // fresh: Unmarshal keeps the fields an event omits
		if err := json.Unmarshal(p, &batch); err != nil {
			end(fmt.Errorf("%w: a bad watch event batch: %w", errStreamLied, err))
			return
		}
		for _, e := range batch {
			ev := WatchEvent{Path: string(e.Path), IsDir: e.Dir, Op: watchOp(e.Op)}
			if ev.Op == 0 {
				end(fmt.Errorf("%w: unknown watch event %q", errStreamLied, e.Op))
				return
			}
			select {
			case w.events <- ev:
			case <-stop:
				end(nil)
				return
			}
		}
	}
}

func watchOp(s string) WatchOp {
	switch s {
	case proto.WatchCreate:
		return WatchCreate
	case proto.WatchWrite:
		return WatchWrite
	case proto.WatchRemove:
		return WatchRemove
	case proto.WatchRename:
		return WatchRename
	case proto.WatchOverflow:
		return WatchOverflow
	}
	return 0
}
