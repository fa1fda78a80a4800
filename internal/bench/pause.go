package bench

import (
	"context"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/client"
)

// pauseResume measures Pause and Resume on one sandbox running a command,
// beside the engine's own pause and unpause of the same container
// (docker_pause, docker_unpause), alternated in one run.
func (b *bench) pauseResume(ctx context.Context) (map[string]float64, error) {
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	cmd := sb.Command(ctx, "while :; do sleep 0.01; done")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := samples{}
	for range b.n {
		if err := s.time("pause", func() error { return sb.Pause(ctx) }); err != nil {
			return nil, err
		}
		if err := s.time("resume", func() error { return sb.Resume(ctx) }); err != nil {
			return nil, err
		}
		if err := s.time("docker_pause", func() error {
			_, err := b.cli.ContainerPause(ctx, sb.ID(), client.ContainerPauseOptions{})
			return err
		}); err != nil {
			return nil, err
		}
		if err := s.time("docker_unpause", func() error {
			_, err := b.cli.ContainerUnpause(ctx, sb.ID(), client.ContainerUnpauseOptions{})
			return err
		}); err != nil {
			return nil, err
		}
	}
	return s.medians(), nil
}
