package bench

import (
	"context"
	"io"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/client"
)

// statsIdle is how long the bench waits before a "usage" sample: Docker's
// stats collector answers at its next tick, once a second while someone
// asks, at once after a second without a request.
const statsIdle = 1100 * time.Millisecond

// usage times one Usage call (the engine's stats and an inspect with the
// writable layer's size, asked together) on a sandbox holding a few files:
// "usage" after statsIdle without a stats request (what a call costs by
// itself), beside the engine's own one-shot stats of it ("docker_stats",
// the same way), alternated; then "usage_back_to_back", calls one after
// the other (on Docker, each waits for the collector's next tick). On an
// engine that cannot measure, Usage's error (errors.ErrUnsupported) says so.
func (b *bench) usage(ctx context.Context) (map[string]float64, error) {
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	if _, err := sb.Execute(ctx, "mkdir -p bench && for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > bench/f$i; done"); err != nil {
		return nil, err
	}
	if _, err := sb.Usage(ctx); err != nil { // the first connection outside the timings
		return nil, err
	}
	call := func() error { _, err := sb.Usage(ctx); return err }
	s := samples{}
	for range b.n {
		time.Sleep(statsIdle)
		if err := s.time("usage", call); err != nil {
			return nil, err
		}
		if !b.docker() {
			continue
		}
		time.Sleep(statsIdle)
		if err := s.time("docker_stats", func() error {
			res, err := b.cli.ContainerStats(ctx, sb.ID(), client.ContainerStatsOptions{})
			if err != nil {
				return err
			}
			defer res.Body.Close()
			_, err = io.Copy(io.Discard, res.Body)
			return err
		}); err != nil {
			return nil, err
		}
	}
	for range b.n {
		if err := s.time("usage_back_to_back", call); err != nil {
			return nil, err
		}
	}
	return s.medians(), nil
}
