package sandbox

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dockersandbox/sandbox/internal/iox"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// MaxProcessRead is the most output one Read returns (1 MiB): what the
// host holds for a read, whatever the process printed.
const MaxProcessRead = 1 << 20

// The helper's limit is the same (see DefaultLogSize's check).
const _ = uint(MaxProcessRead-proto.MaxProcRead) + uint(proto.MaxProcRead-MaxProcessRead)

// ProcessOutput is a piece of a process's output log (see Read).
type ProcessOutput struct {
	// Data is the log's bytes from Cursor to Next.
	Data []byte
	// Cursor is where Data begins in the process's output, counted in
	// bytes from its start; Next is where it ends, the cursor of the next
	// read.
	Cursor, Next int64
	// Dropped counts the bytes between the cursor asked for and Cursor
	// that the log no longer held (it keeps the latest LogSize bytes).
	Dropped int64
	// Done reports that the process exited and its output ended: no read
	// from Next will return more.
	Done bool
	// Info is the process's state at the time of the read.
	Info ProcessInfo
}

// An OutputOption adjusts one Process.Read.
type OutputOption func(*outputConfig) error

type outputConfig struct {
	max  int
	wait time.Duration
}

// OutputMax makes Read return at most n bytes (1 to MaxProcessRead, the
// default).
func OutputMax(n int) OutputOption {
	return func(c *outputConfig) error {
		if n <= 0 || n > MaxProcessRead {
			return fmt.Errorf("sandbox: read max must be between 1 and %d, got %d", MaxProcessRead, n)
		}
		c.max = n
		return nil
	}
}

// OutputWait makes Read wait up to d (and within its context) for output
// past the cursor, or for the output to end, when there is none yet. It
// then returns what there is, possibly nothing, without error.
func OutputWait(d time.Duration) OutputOption {
	return func(c *outputConfig) error {
		if d < 0 {
			return fmt.Errorf("sandbox: read wait must be non-negative, got %v", d)
		}
		c.wait = d
		return nil
	}
}

// Read returns the process's output from cursor (0 for the start; Next of
// the previous read to go on), at most MaxProcessRead bytes, without
// waiting unless OutputWait says so. Output the log no longer holds is
// skipped and counted in Dropped. A cursor beyond what the process wrote
// is an error. Reading works the same while the process runs and after it
// exited.
func (p *Process) Read(ctx context.Context, cursor int64, opts ...OutputOption) (out ProcessOutput, err error) {
	ctx, op := p.begin(ctx, "Process.Read")
	defer func() { op.bytes(int64(len(out.Data))); op.end(&err) }()
	cfg := outputConfig{max: MaxProcessRead}
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return ProcessOutput{}, err
		}
	}
	if cursor < 0 {
		return ProcessOutput{}, fmt.Errorf("sandbox: negative read cursor %d", cursor)
	}
	var until time.Time
	if cfg.wait > 0 {
		until = time.Now().Add(cfg.wait)
	}
	for {
		out, err := p.readOnce(ctx, cursor, cfg.max, until, nil)
		if err != nil || out.Next > cursor || out.Done || until.IsZero() || !time.Now().Before(until) {
			return out, err
		}
	}
}

// readOnce asks for at most max bytes from cursor, waiting in the helper
// until until (no wait when zero). The bytes go into buf's space (reused)
// and the output's Data.
func (p *Process) readOnce(ctx context.Context, cursor int64, max int, until time.Time, buf []byte) (ProcessOutput, error) {
	var wait int64
	if !until.IsZero() {
		wctx, cancel := context.WithDeadline(ctx, until)
		wait = waitSlice(wctx)
		cancel()
	}
	w := &procOutBuffer{buf: buf[:0], max: max}
	res, err := p.s.procCall(ctx, proto.Request{Op: proto.OpProcRead, Proc: &proto.ProcRequest{
		ID: p.id, Cursor: cursor, Max: max, WaitMs: wait,
	}}, nil, p, w)
	if err != nil {
		return ProcessOutput{}, err
	}
	info, err := p.info(res)
	if err != nil {
		return ProcessOutput{}, err
	}
	r := res.Proc
	if r.Start < cursor || r.Dropped != r.Start-cursor || r.Next-r.Start != int64(len(w.buf)) {
		return ProcessOutput{}, fmt.Errorf("%w: a read from %d answered [%d, %d) with %d bytes, %d dropped", errHelperLied, cursor, r.Start, r.Next, len(w.buf), r.Dropped)
	}
	return ProcessOutput{Data: w.buf, Cursor: r.Start, Next: r.Next, Dropped: r.Dropped, Done: r.Done, Info: info}, nil
}

// Follow writes the process's output from cursor to w as it comes, until
// the output ends (the process exited), ctx ends, or a write to w fails,
// and returns the cursor after the last byte written. It holds at most
// MaxProcessRead bytes at a time. Output that the log dropped before it
// was read (a w slower than the process) is skipped, and Follow goes on;
// when it returns, its error then includes an *OutputDroppedError
// (errors.Is(err, ErrOutputDropped)) that counts the bytes skipped, alone
// when the output ended, else joined to the error that ended it.
func (p *Process) Follow(ctx context.Context, cursor int64, w io.Writer) (_ int64, err error) {
	ctx, op := p.begin(ctx, "Process.Follow")
	counted := &iox.CountWriter{W: w}
	w = counted
	defer func() { op.bytes(counted.N); op.end(&err) }()
	if cursor < 0 {
		return cursor, fmt.Errorf("sandbox: negative read cursor %d", cursor)
	}
	var buf []byte
	var drops dropTally // process.go
	for {
		if err := ctx.Err(); err != nil {
			return cursor, drops.join(err)
		}
		out, err := p.readOnce(ctx, cursor, MaxProcessRead, time.Now().Add(proto.MaxProcWait), buf)
		if err != nil {
			return cursor, drops.join(err)
		}
		drops.add(out)
		buf = out.Data
		if len(out.Data) > 0 {
			if _, err := w.Write(out.Data); err != nil {
				return out.Cursor, drops.join(err)
			}
		}
		cursor = out.Next
		if out.Done {
			return cursor, drops.join(nil)
		}
	}
}

// procOutBuffer collects a read's output frames, at most max bytes: more
// is a helper breaking the protocol.
type procOutBuffer struct {
	buf []byte
	max int
}

func (b *procOutBuffer) Write(p []byte) (int, error) {
	if len(b.buf)+len(p) > b.max {
		return 0, fmt.Errorf("%w: a process read sent more than the %d bytes asked for", errHelperLied, b.max)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}
