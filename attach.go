package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/dockersandbox/sandbox/engine"
)

// Attach returns the running sandbox with the given container ID or name,
// for example one created by another process that died. Options that tune
// the client and the operations apply (WithClient, WithClientOptions,
// WithExecuteTimeout, WithMaxOutputBytes, WithMaxDownloadBytes,
// WithAutoRemove, WithSharedChannel); options that shape a new container
// are ignored: the working directory and user are the container's. A
// container that is not a sandbox fails with ErrInvalidOption; one that is
// stopped, with ErrStopped (WithStart starts it first); one that is not
// running otherwise, with ErrGone. A paused one is attached paused (see
// Pause; WithAutoResume, WithAutoPause apply).
//
// The handle owns the container as one from New does: its Close removes
// the container (or stops it, with WithAutoRemove(false)). Call Detach
// instead to let go of the handle and leave the container running.
func Attach(ctx context.Context, idOrName string, opts ...Option) (*DockerSandbox, error) {
	return open(ctx, opts, func(ctx context.Context, eng engine.Engine, o *options) (*DockerSandbox, error) {
		return attach(ctx, eng, o, idOrName)
	})
}

func attach(ctx context.Context, eng engine.Engine, o *options, idOrName string) (*DockerSandbox, error) {
	c, err := eng.Inspect(ctx, idOrName)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, fmt.Errorf("sandbox: attach %s: %w: %v", idOrName, ErrGone, err)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: attach %s: %w", idOrName, daemonErr(err))
	}
	if c.Labels[LabelSandbox] != "true" {
		return nil, fmt.Errorf("%w: container %s is not a sandbox (no %s label)", ErrInvalidOption, idOrName, LabelSandbox)
	}
	paused := c.State == engine.StatePaused
	if c.State != engine.StateRunning && c.State != engine.StateRestarting && !paused {
		switch {
		case c.State != engine.StateExited:
			return nil, fmt.Errorf("sandbox: attach %s: %w: the container is not running", idOrName, ErrGone)
		case !o.durable.start:
			return nil, fmt.Errorf("sandbox: attach %s: %w (Attach WithStart starts it)", idOrName, ErrStopped)
		}
		if err := startStopped(ctx, eng, c.ID); err != nil {
			return nil, err
		}
	}
	o.workingDir, o.user, o.image = c.Labels[LabelWorkingDir], c.User, c.Image
	if o.workingDir == "" {
		o.workingDir = c.WorkingDir
	}
	if o.workingDir == "" {
		o.workingDir = "/"
	}
	s := newSandbox(c.ID, o, eng)
	s.portsDir = c.Labels[labelPortsDir]
	s.life.paused = paused
	s.life.frozen.Store(paused)
	return s, nil
}
