package bench

import (
	"context"
	"time"

	"github.com/dockersandbox/sandbox"
)

// processes measures, on the shared channel, Start of a trivial process
// ("start_process", starts 50 ms apart: PID 1 starts its next launcher 25 ms
// after a start) and a Read of a running process's log ("poll_output",
// the process printing a line every 10 ms).
func (b *bench) processes(ctx context.Context) (map[string]float64, error) {
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	if _, err := sb.Execute(ctx, "true"); err != nil { // opens the shared channel
		return nil, err
	}
	s := samples{}
	for range b.n {
		time.Sleep(50 * time.Millisecond)
		var p *sandbox.Process
		if err := s.time("start_process", func() (err error) {
			p, err = sb.Start(ctx, "exit 0")
			return err
		}); err != nil {
			return nil, err
		}
		if _, err := p.Wait(ctx); err != nil {
			return nil, err
		}
	}
	p, err := sb.Start(ctx, "while :; do echo tick; sleep 0.01; done")
	if err != nil {
		return nil, err
	}
	var cursor int64
	for range b.n {
		time.Sleep(5 * time.Millisecond)
		if err := s.time("poll_output", func() error {
			out, err := p.Read(ctx, cursor)
			cursor = out.Next
			return err
		}); err != nil {
			return nil, err
		}
	}
	return s.medians(), p.Kill(ctx)
}
