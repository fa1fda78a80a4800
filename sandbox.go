package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// DockerSandbox is an isolated Docker container an agent works in. Create
// it with New and release it with Close. It is safe for concurrent use.
type DockerSandbox struct {
	id        string
	opts      *options
	eng       engine.Engine // the engine the sandbox runs on
	dock      *dockerEngine // eng, when it is the Docker one; else nil
	ownEngine bool          // Close and Detach close eng

	closed    atomic.Bool
	closeMu   sync.Mutex
	closeDone bool          // a Close succeeded: later ones return nil
	closing   *closeCall    // the Close in flight, shared by concurrent callers
	removeFor time.Duration // bound of Close's Docker calls; 0: closeTimeout

	podman bool // the engine is Podman's Docker API (see isPodman)

	chMu      sync.Mutex
	ch        *channel // the shared channel to the helper, opened on first use
	chOpening *opening // the channel being opened, if any
	chRetryAt time.Time

	life lifeState // paused, stopped, calls in flight (pause.go)

	ports    *portSocket // the port socket Dial uses, if any (ports_socket.go)
	portsDir string      // a detached sandbox's port socket directory, to remove with it
}

// closeCall is one attempt of Close; concurrent callers share its outcome.
type closeCall struct {
	done chan struct{}
	err  error
}

// ErrStillRemoving: Close's bound ended while the daemon was removing the
// container (a large writable layer takes a while). The daemon goes on
// removing it whatever became of the call; the container disappears later,
// and calling Close again waits for that (within its bound).
var ErrStillRemoving = errors.New("sandbox: the daemon is still removing the container")

// New creates and starts a sandbox container. It connects to Docker (from
// the environment unless WithClient or WithClientOptions say otherwise),
// makes the image available according to the pull policy, creates the
// container with the in-container helper as its main process, and starts
// it. If any step fails, nothing is left behind and the error says which
// step failed. A failure to reach the daemon, at any step, is
// ErrDaemonUnreachable. Before creating, New removes the library's
// containers that were created and never started by a process that died
// on this host (see Prune).
func New(ctx context.Context, opts ...Option) (*DockerSandbox, error) {
	return open(ctx, opts, create)
}

// open validates the options, connects, and makes the sandbox with mk; the
// sandbox owns the engine if open created it, else it is closed on failure.
func open(ctx context.Context, opts []Option, mk func(context.Context, engine.Engine, *options) (*DockerSandbox, error)) (*DockerSandbox, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	eng, own, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	s, err := mk(ctx, eng, o)
	if err != nil {
		if own {
			eng.Close()
		}
		return nil, daemonErr(err)
	}
	s.ownEngine = own
	s.armAutoPause()
	return s, nil
}

// connect returns the engine to use: WithEngine's, or Docker's (its client
// pinged, with its API version negotiated); own is true when connect made it.
func connect(ctx context.Context, o *options) (eng engine.Engine, own bool, err error) {
	if o.engine != nil {
		return o.engine, false, nil
	}
	if o.client != nil {
		if _, err := o.client.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
		}
		return newDockerEngine(ctx, o.client, false), false, nil
	}
	cli, err := dial(ctx, o.clientOpts)
	if err != nil {
		return nil, false, err
	}
	return newDockerEngine(ctx, cli, true), true, nil
}

// newSandbox returns the handle of the sandbox id on eng.
func newSandbox(id string, o *options, eng engine.Engine) *DockerSandbox {
	s := &DockerSandbox{id: id, opts: o, eng: eng}
	if d, ok := eng.(*dockerEngine); ok {
		s.dock, s.podman = d, d.podman
	}
	return s
}

// startBound bounds what New does between creating the container and
// starting it (copying the helper in, reading the image's user database,
// the start itself): a container left "created" longer than that (plus
// ContainerCreate's own bound) was abandoned (see abandonedAfter).
const startBound = 2 * time.Minute

// afterCreate, when set (by tests only), is called with the container's ID
// right after ContainerCreate: a test process crashes itself there.
var afterCreate func(id string)

// create makes the sandbox: on Docker the container, as createDocker
// does; on another engine, by the engine's Create.
func create(ctx context.Context, eng engine.Engine, o *options) (*DockerSandbox, error) {
	d, ok := eng.(*dockerEngine)
	if !ok {
		return createOn(ctx, eng, o)
	}
	return createDocker(ctx, d, o)
}

// createOn makes the sandbox with a non-Docker engine, which refuses the
// Docker-only options.
func createOn(ctx context.Context, eng engine.Engine, o *options) (*DockerSandbox, error) {
	if err := o.neutral(eng.Name()); err != nil {
		return nil, err
	}
	info, err := eng.Create(ctx, o.spec())
	if errors.Is(err, engine.ErrImageNotFound) {
		return nil, fmt.Errorf("%w: %s on %s: %w", ErrImageNotFound, o.image, eng.Name(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: create on %s: %w", eng.Name(), daemonErr(err))
	}
	return newSandbox(info.ID, o, eng), nil
}

// createDocker makes the container; on failure it removes what it made.
// When the engine refuses to start it because a default resource limit
// exceeds what its host allows (Podman's default nofile and nproc, say),
// it tries again with that limit set lower (see adaptUlimits; at most four
// times).
func createDocker(ctx context.Context, d *dockerEngine, o *options) (*DockerSandbox, error) {
	arch, err := ensureImage(ctx, d.cli, o)
	if err != nil {
		return nil, err
	}
	bin, err := helperbin.For(arch)
	if err != nil {
		return nil, fmt.Errorf("sandbox: image %s: %w", o.image, err)
	}
	sweepAbandoned(ctx, d)
	sp, cfg, host := o.containerConfig()
	ps := o.portSocket(d, host) // nil when Dial cannot use one
	if ps != nil {
		host.Mounts = append(host.Mounts, ps.mount())
		cfg.Labels[labelPortsDir] = ps.parent
	}
	tries := map[string]int{} // limits New set after a refusal, by name
	for {
		cfg.Labels[LabelCreated] = time.Now().UTC().Format(time.RFC3339)
		s, err := createOnce(ctx, d, o, sp, cfg, host, bin)
		if err == nil {
			s.ports = ps
			return s, nil
		}
		retry, err := adaptUlimits(host, tries, err)
		if !retry {
			if ps != nil {
				ps.close()
			}
			return nil, err
		}
	}
}

// createOnce creates and starts the container.
func createOnce(ctx context.Context, d *dockerEngine, o *options, sp *engine.Spec, cfg *container.Config, host *container.HostConfig, bin []byte) (*DockerSandbox, error) {
	id, err := d.createContainer(ctx, cfg, host, o.name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", daemonErr(err))
	}
	s := newSandbox(id, o, d)
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
	sctx, cancel := context.WithTimeout(ctx, startBound)
	defer cancel()
	if err := d.prepareAndStart(sctx, s.id, sp, bin); err != nil {
		return fail(fmt.Errorf("sandbox: %w", daemonErr(err)))
	}
	if err := restoreVolumes(sctx, d.cli, s.id, o.image, o.snap.volumes); err != nil {
		return fail(fmt.Errorf("sandbox: %w", daemonErr(err)))
	}
	return s, nil
}

// ID returns the container's short ID (12 hex characters), or the ID of
// the sandbox on another engine as that engine gives it (a pod's name).
func (s *DockerSandbox) ID() string { return shortID(s.id) }

// WorkingDir returns the directory commands run in and relative paths
// resolve against.
func (s *DockerSandbox) WorkingDir() string { return s.opts.workingDir }

// MaxOutputBytes returns the cap on the output Execute keeps (WithMaxOutputBytes).
func (s *DockerSandbox) MaxOutputBytes() int { return s.opts.maxOutputBytes }

// Close removes the container (or stops it, with WithAutoRemove(false)) and
// releases the Docker client if the sandbox made it. It returns within
// about 30 s (closeTimeout), quickly in the usual case: the helper exits at
// once on SIGTERM. Later calls on the sandbox return ErrClosed. Close does
// the same on a sandbox from Attach: it ends the container whoever made it.
// To let go of a handle and leave the container running, call Detach
// instead (a Close after Detach does nothing).
//
// A Close that fails can be called again until it succeeds (the daemon was
// unreachable: ErrDaemonUnreachable; its bound ended while the daemon was
// removing a large container: ErrStillRemoving, and the next Close waits
// for the removal to finish); once one succeeds, later calls return nil.
// Concurrent calls share one attempt.
func (s *DockerSandbox) Close() error {
	s.closeMu.Lock()
	if s.closeDone {
		s.closeMu.Unlock()
		return nil
	}
	if c := s.closing; c != nil {
		s.closeMu.Unlock()
		<-c.done
		return c.err
	}
	c := &closeCall{done: make(chan struct{})}
	s.closing = c
	first := !s.closed.Swap(true)
	s.closeMu.Unlock()

	if first {
		s.stopAutoPause()
		s.closeChannel()
	}
	if s.opts.autoRemove {
		c.err = s.remove()
	} else {
		c.err = s.stop()
	}
	if c.err == nil {
		s.closePorts()
	}
	s.closeMu.Lock()
	s.closing = nil
	s.closeDone = c.err == nil
	s.closeMu.Unlock()
	if c.err == nil && s.ownEngine {
		_ = s.eng.Close() // Docker's only drops idle connections
	}
	close(c.done)
	return c.err
}

// closeTimeout bounds the Docker calls of Close, which has no context.
const closeTimeout = 30 * time.Second

// removeSettle is the part of Close's bound kept, when the removal request
// times out, to ask the daemon what became of the container.
const removeSettle = 5 * time.Second

// closeBound returns the bound of Close's Docker calls.
func (s *DockerSandbox) closeBound() time.Duration {
	if s.removeFor > 0 {
		return s.removeFor
	}
	return closeTimeout
}

// remove kills the container, then removes it with its anonymous volumes.
// The daemon removes a container whatever becomes of the request (moby's
// ContainerRm takes no context, Docker 20.10 through 29): when the request
// times out, or another removal is in progress (an earlier Close's, or
// Docker's auto-remove), remove waits for the container to disappear
// within the bound, and says ErrStillRemoving if the daemon answers that
// it is removing it. (The kill comes first so that the container's state
// says "removing" while it is removed: a running one says "running".)
func (s *DockerSandbox) remove() error {
	bound := s.closeBound()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, bound-min(removeSettle, bound/2))
	defer rcancel()
	err := s.eng.Remove(rctx, s.id)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return s.awaitRemoval(ctx, err)
	}
	return fmt.Errorf("sandbox: remove container %s: %w", s.ID(), daemonErr(err))
}

// awaitRemoval waits until the container no longer exists or ctx ends;
// cause is why remove waits.
func (s *DockerSandbox) awaitRemoval(ctx context.Context, cause error) error {
	state := "" // as the daemon last said; "" while it has not answered
	for {
		info, err := s.eng.Inspect(ctx, s.id)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			return nil
		case err == nil && info.State != engine.StateUnknown:
			state = string(info.State)
		case err == nil:
			state = "unknown"
		case errors.Is(err, engine.ErrUnreachable):
			return fmt.Errorf("sandbox: remove container %s: %w", s.ID(), daemonErr(err))
		}
		select {
		case <-ctx.Done():
			switch engine.State(state) {
			case "":
				return fmt.Errorf("sandbox: remove container %s: %w: no answer within %v (%v)", s.ID(), ErrDaemonUnreachable, s.closeBound(), cause)
			case engine.StateRemoving, engine.StateDead:
				return fmt.Errorf("sandbox: remove container %s: %w (state %q after %v); the daemon goes on removing it, and Close again waits for that",
					s.ID(), ErrStillRemoving, state, s.closeBound())
			}
			// The request may never have reached the daemon.
			return fmt.Errorf("sandbox: remove container %s: not removed within %v (state %q): %w", s.ID(), s.closeBound(), state, cause)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *DockerSandbox) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.closeBound())
	defer cancel()
	err := s.stopContainer(ctx, stopTimeout) // also a paused one (stop.go)
	// An engine that cannot stop (Kubernetes): a sandbox gone, or ended by
	// itself, is kept as it is.
	if errors.Is(err, errors.ErrUnsupported) {
		info, ierr := s.eng.Inspect(ctx, s.id)
		if errors.Is(ierr, engine.ErrNotFound) || ierr == nil && info.State == engine.StateExited {
			err = nil
		}
	}
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: no answer within %v", ErrDaemonUnreachable, s.closeBound())
		}
		return fmt.Errorf("sandbox: stop container %s: %w", s.ID(), daemonErr(err))
	}
	return nil
}
