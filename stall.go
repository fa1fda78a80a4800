package sandbox

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
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
	go watchSilence(done, &p.last, archiveStall, func() { cancel(errArchiveStalled) })
	return ctx, p, func() { close(done); cancel(nil) }
}

// watchSilence calls silent, once, when the time in last (unix
// nanoseconds; 0 while nothing is awaited) is more than limit ago. It looks
// every proto.AliveInterval until stop is closed.
func watchSilence(stop <-chan struct{}, last *atomic.Int64, limit time.Duration, silent func()) {
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if since := last.Load(); since != 0 && time.Since(time.Unix(0, since)) > limit {
				silent()
				return
			}
		}
	}
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
