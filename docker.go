package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/client"
)

// dockerAPI lists the Docker client methods the sandbox calls; *client.Client
// implements it.
type dockerAPI interface {
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImagePull(ctx context.Context, ref string, options client.ImagePullOptions) (client.ImagePullResponse, error)
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerStop(ctx context.Context, id string, options client.ContainerStopOptions) (client.ContainerStopResult, error)
	ContainerKill(ctx context.Context, id string, options client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerPause(ctx context.Context, id string, options client.ContainerPauseOptions) (client.ContainerPauseResult, error)
	ContainerUnpause(ctx context.Context, id string, options client.ContainerUnpauseOptions) (client.ContainerUnpauseResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ServerVersion(ctx context.Context, options client.ServerVersionOptions) (client.ServerVersionResult, error)
	ExecCreate(ctx context.Context, id string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	CopyToContainer(ctx context.Context, id string, options client.CopyToContainerOptions) (client.CopyToContainerResult, error)
	CopyFromContainer(ctx context.Context, id string, options client.CopyFromContainerOptions) (client.CopyFromContainerResult, error)
	Close() error
}

var _ dockerAPI = (*client.Client)(nil)

// gone turns the engine's "no such sandbox", "not running" and "paused"
// answers into ErrGone and ErrPaused; other errors pass through.
func gone(err error) error {
	err = classify(err) // a Docker client's error, from a Docker-only path
	switch {
	case err == nil, errors.Is(err, ErrGone):
		return err
	case errors.Is(err, engine.ErrPaused): // an exec on a paused container
		return fmt.Errorf("%w: %v", ErrPaused, err)
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrNotRunning):
		return fmt.Errorf("%w: %v", ErrGone, err) // the last one: Podman's exec on a stopped container, too
	}
	return err
}

// daemonErr turns a failure to reach the engine (engine.ErrUnreachable,
// or a Docker client's: no socket, refused, reset, a broken TLS
// handshake) into ErrDaemonUnreachable, quoting the cause with %v: a
// missing socket's ENOENT must not pass for a missing file
// (fs.ErrNotExist). Other errors pass through.
func daemonErr(err error) error {
	if err == nil || errors.Is(err, ErrDaemonUnreachable) || !errors.Is(err, engine.ErrUnreachable) && !client.IsErrConnectionFailed(err) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
}

// isNotFound reports a missing container or object in a Docker client's
// error (the Docker engine and Docker-only paths). Podman sometimes
// answers a container being removed with a 500 whose text says so.
func isNotFound(err error) bool {
	return cerrdefs.IsNotFound(err) || err != nil && strings.Contains(err.Error(), "no such container")
}

// removing reports whether err says that the container is being removed
// already (Docker's auto-remove of a sandbox that ended itself, say).
func removing(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// goneSettle bounds how long goneOr waits for the daemon to notice that a
// container whose helper connection broke has exited.
const goneSettle = time.Second

// goneLooks is how many inspects goneOr makes at least before it gives up.
const goneLooks = 4

// goneOr returns ErrGone when err is a helper failure and the container is
// not running any more (killed or removed from outside); else err. It looks
// within ctx, the call's.
func (s *DockerSandbox) goneOr(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, ErrHelper) || errors.Is(err, ErrProtocolVersion) {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if ctx.Err() != nil { // the call's time is up: no looking
		return err
	}
	// Bounded: the daemon itself may be what does not answer.
	ctx, cancel := context.WithTimeout(ctx, 3*goneSettle)
	defer cancel()
	// The helper's connection may break (the container is ending) before
	// the daemon records the exit: a running container is looked at again,
	// for goneSettle and at least goneLooks times (a loaded daemon answers
	// an inspect in a second; at a load of 30 it had not recorded a removal
	// after goneSettle).
	for deadline, looks := time.Now().Add(goneSettle), 1; ; looks++ {
		info, ierr := s.eng.Inspect(ctx, s.id)
		switch {
		case errors.Is(ierr, engine.ErrNotFound):
			return fmt.Errorf("sandbox %s: %w: the container was removed (%v)", s.ID(), ErrGone, err)
		case ierr == nil && info.State == engine.StatePaused:
			return fmt.Errorf("sandbox %s: %w: paused by another handle or from outside (%v)", s.ID(), ErrPaused, err)
		case ierr == nil && info.State != engine.StateUnknown && info.State != engine.StateRunning && info.State != engine.StateRestarting:
			return fmt.Errorf("sandbox %s: %w: the container exited with status %d (%v)", s.ID(), ErrGone, info.ExitCode, err)
		case errors.Is(ierr, engine.ErrUnreachable) && ctx.Err() == nil:
			return fmt.Errorf("%w (%w: %v)", err, ErrDaemonUnreachable, ierr)
		case ierr != nil || time.Now().After(deadline) && looks >= goneLooks:
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(goneSettle / 10):
		}
	}
}

// isPodman reports whether the engine is Podman's Docker-compatible API,
// whose archive endpoints mishandle some path names (glob characters,
// backslashes, non-ASCII): transfers then go through the helper.
func isPodman(ctx context.Context, cli dockerAPI) bool {
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return false
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(v.Platform.Name), "podman")
}
