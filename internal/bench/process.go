package bench

import (
	"context"
	"time"

	"github.com/dockersandbox/sandbox"
)

// processes measures, on the shared channel:
//   - "start_process": StartProcess of a trivial process, right after another
//     call (an Info of an idle process, not timed), as every key of ops
//     follows a call; 50 ms apart, for PID 1 starts its next launcher
//     25 ms after a start;
//   - "call_after_idle": that Info, 50 ms after the last call: what any
//     call costs once the machine went idle meanwhile (its processes'
//     threads asleep), beside which the other keys are read;
//   - "poll_output": a Read of a running process's new output right after
//     the last Read, the process printing a line every 10 ms.
func (b *bench) processes(ctx context.Context) (map[string]float64, error) {
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	idle, err := sb.StartProcess(ctx, "cat") // waits for input that never comes
	if err != nil {
		return nil, err
	}
	s := samples{}
	for range b.n {
		time.Sleep(50 * time.Millisecond)
		if err := s.time("call_after_idle", func() error {
			_, err := idle.Info(ctx)
			return err
		}); err != nil {
			return nil, err
		}
		var p *sandbox.Process
		if err := s.time("start_process", func() (err error) {
			p, err = sb.StartProcess(ctx, "exit 0")
			return err
		}); err != nil {
			return nil, err
		}
		if _, err := p.Wait(ctx); err != nil {
			return nil, err
		}
	}
	if err := idle.Kill(ctx); err != nil {
		return nil, err
	}
	ticker, err := sb.StartProcess(ctx, "while :; do echo tick; sleep 0.01; done")
	if err != nil {
		return nil, err
	}
	var cursor int64
	for range b.n {
		if err := s.time("poll_output", func() error {
			out, err := ticker.Read(ctx, cursor)
			cursor = out.Next
			return err
		}); err != nil {
			return nil, err
		}
	}
	return s.medians(), ticker.Kill(ctx)
}
