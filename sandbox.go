package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/moby/moby/client"
)

// DockerSandbox is an isolated Docker container an agent works in. Create
// it with New and release it with Close. It is safe for concurrent use.
type DockerSandbox struct {
	id        string
	opts      *options
	cli       dockerAPI
	ownClient bool

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	podman bool // the engine is Podman (see isPodman)

	chMu      sync.Mutex
	ch        *channel      // the shared channel to the helper, opened on first use
	chOpening chan struct{} // closed when the channel being opened is, or is not
	chRetryAt time.Time
}

// New creates and starts a sandbox container. It connects to Docker (from
// the environment unless WithClient or WithClientOptions say otherwise),
// makes the image available according to the pull policy, creates the
// container with the in-container helper as its main process, and starts
// it. If any step fails, nothing is left behind and the error says which
// step failed.
func New(ctx context.Context, opts ...Option) (*DockerSandbox, error) {
	return open(ctx, opts, create)
}

// open validates the options, connects, and makes the sandbox with mk; the
// sandbox owns the client if open created it, else it is closed on failure.
func open(ctx context.Context, opts []Option, mk func(context.Context, dockerAPI, *options) (*DockerSandbox, error)) (*DockerSandbox, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	cli, own, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	s, err := mk(ctx, cli, o)
	if err != nil {
		if own {
			cli.Close()
		}
		return nil, err
	}
	s.ownClient = own
	return s, nil
}

// connect returns the Docker client to use, pinged and with its API
// version negotiated.
func connect(ctx context.Context, o *options) (dockerAPI, bool, error) {
	if o.client != nil {
		if _, err := o.client.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
		}
		return o.client, false, nil
	}
	opts := o.clientOpts
	if len(opts) == 0 {
		opts = []client.Opt{client.FromEnv}
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, false, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	return cli, true, nil
}

// create makes the container; on failure it removes what it made.
func create(ctx context.Context, cli dockerAPI, o *options) (*DockerSandbox, error) {
	arch, err := ensureImage(ctx, cli, o)
	if err != nil {
		return nil, err
	}
	bin, err := helperbin.For(arch)
	if err != nil {
		return nil, fmt.Errorf("sandbox: image %s: %w", o.image, err)
	}
	cfg, host := o.containerConfig()
	// Not cancelled midway: a container the daemon made but whose ID never
	// reached us would leak.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	created, err := cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, Name: o.name})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("sandbox: create container: %w", err)
	}
	s := &DockerSandbox{id: created.ID, opts: o, cli: cli, podman: isPodman(ctx, cli)}
	if err := ctx.Err(); err != nil {
		if rmErr := s.remove(); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, err
	}
	fail := func(err error) (*DockerSandbox, error) {
		if rmErr := s.remove(); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("sandbox: remove container %s after the failure: %w", s.ID(), rmErr))
		}
		return nil, err
	}
	uid, gid, err := resolveUser(ctx, cli, s.id, o.user)
	if err != nil {
		return fail(fmt.Errorf("sandbox: %w", err))
	}
	if err := prepareFS(ctx, cli, s.id, o, bin, uid, gid); err != nil {
		return fail(fmt.Errorf("sandbox: %w", err))
	}
	if _, err := cli.ContainerStart(ctx, s.id, client.ContainerStartOptions{}); err != nil {
		return fail(fmt.Errorf("sandbox: start container: %w", err))
	}
	return s, nil
}

// ID returns the container's short ID (12 hex characters).
func (s *DockerSandbox) ID() string {
	if len(s.id) > 12 {
		return s.id[:12]
	}
	return s.id
}

// WorkingDir returns the directory commands run in and relative paths
// resolve against.
func (s *DockerSandbox) WorkingDir() string { return s.opts.workingDir }

// Close removes the container (or stops it, with WithAutoRemove(false)) and
// releases the Docker client if the sandbox made it. It is idempotent and
// returns quickly: the helper exits at once on SIGTERM. Later calls on the
// sandbox return ErrClosed.
func (s *DockerSandbox) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeChannel()
		if s.opts.autoRemove {
			s.closeErr = s.remove()
		} else {
			s.closeErr = s.stop()
		}
		if s.ownClient {
			s.closeErr = errors.Join(s.closeErr, s.cli.Close())
		}
	})
	return s.closeErr
}

// closeTimeout bounds the Docker calls of Close, which has no context.
const closeTimeout = 30 * time.Second

func (s *DockerSandbox) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, err := s.cli.ContainerRemove(ctx, s.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !isNotFound(err) && !removing(err) {
		return fmt.Errorf("sandbox: remove container %s: %w", s.ID(), err)
	}
	return nil
}

func (s *DockerSandbox) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	timeout := 5
	_, err := s.cli.ContainerStop(ctx, s.id, client.ContainerStopOptions{Timeout: &timeout})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("sandbox: stop container %s: %w", s.ID(), err)
	}
	return nil
}
