package sandbox

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// archiveStall is how long a stream of Docker's archive API (an upload or
// a download of a large file) may make no progress before it is given up:
// a frozen daemon must not hold a call for ever, even one with no deadline.
const archiveStall = 15 * time.Second

var errArchiveStalled = fmt.Errorf("%w: the archive stream made no progress for %v", ErrDaemonUnreachable, archiveStall)

// progress ends a context when the stream it watches makes no progress for
// archiveStall.
type progress struct {
	last atomic.Int64 // unix nanoseconds
}

// watchProgress returns a context that ends, with errArchiveStalled as its
// cause, when the returned progress is not touched for archiveStall; stop
// releases it.
func watchProgress(ctx context.Context) (context.Context, *progress, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	p := &progress{}
	p.touch()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if time.Since(time.Unix(0, p.last.Load())) > archiveStall {
					cancel(errArchiveStalled)
					return
				}
			}
		}
	}()
	return ctx, p, func() { close(done); cancel(nil) }
}

func (p *progress) touch() { p.last.Store(time.Now().UnixNano()) }

// reader counts every read of r as progress.
func (p *progress) reader(r io.Reader) io.Reader { return progressReader{r, p} }

type progressReader struct {
	r io.Reader
	p *progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.touch()
	return n, err
}

// stalled returns errArchiveStalled when the watch, not the caller's
// context (parent), ended the stream, else err.
func stalled(parent, watched context.Context, err error) error {
	if err != nil && parent.Err() == nil && context.Cause(watched) == errArchiveStalled {
		return errArchiveStalled
	}
	return err
}
