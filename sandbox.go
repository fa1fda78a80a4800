package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.opentelemetry.io/otel/trace"
)

// Sandbox is an isolated container an agent works in, on Docker or on
// another engine (see WithEngine). Create it with New and release it with
// Close. It is safe for concurrent use.
type Sandbox struct {
	id        string
	opts      *options
	eng       engine.Engine  // the engine the sandbox runs on
	dock      *docker.Engine // eng, when it is the Docker one; else nil
	ownEngine bool           // Close and Detach close eng

	closed    atomic.Bool
	closeMu   sync.Mutex
	closeDone bool          // a Close succeeded: later ones return nil
	closing   *closeCall    // the Close in flight, shared by concurrent callers
	removeFor time.Duration // bound of Close's Docker calls; 0: closeTimeout

	podman bool // the engine is Podman's Docker API (see isPodman)
	// copyByExec: the engine's archive copies are execs of their own
	// (engine.ExecCopier), so files of every size take the helper.
	copyByExec bool

	chMu      sync.Mutex
	ch        *channel // the shared channel to the helper, opened on first use
	chOpening *opening // the channel being opened, if any
	chRetryAt time.Time

	execMu sync.Mutex
	execs  map[*helperCall]struct{} // calls on execs of their own, open: Close ends them

	life     lifeState   // paused, stopped, calls in flight (lifecycle.go)
	engWatch engineWatch // the engine's stalls, for the silence watchdogs (silence.go)

	meter meterState // the last Usage sample, for CPUPercent (observe.go)

	// ports is the port socket Dial and the shared channel use, if any
	// (ports_socket.go); New wrote the helper into its directory
	// (channel_direct.go).
	ports    *portSocket
	noDirect atomic.Bool       // a channel over the port socket failed to open: not tried again
	first    *net.UnixConn     // the first channel's connection, until used (channel_first.go); chMu
	egress   *egressState      // WithEgress's proxy, if any (egress.go)
	obs      *observer         // its calls' audit records and spans; nil: none (observe.go)
	made     trace.SpanContext // the span of the New or Attach that made the handle
	portsDir string            // a detached sandbox's port socket directory, to remove with it
}

// closeCall is one attempt of Close; concurrent callers share its outcome.
type closeCall struct {
	done chan struct{}
	err  error
}

// New creates and starts a sandbox container. It connects to Docker (from
// the environment unless WithEngine says otherwise),
// makes the image available according to the pull policy, creates the
// container with the in-container helper as its main process, and starts
// it. If any step fails, nothing is left behind and the error says which
// step failed. A failure to reach the daemon, at any step, is
// ErrDaemonUnreachable. Before creating, New removes the library's
// containers that were created and never started by a process that died
// on this host (see Prune).
func New(ctx context.Context, opts ...Option) (*Sandbox, error) {
	return open(ctx, opts, callNew, "New", create)
}

// open validates the options, connects, and makes the sandbox with mk; the
// sandbox owns the engine if open created it, else it is closed on failure.
func open(ctx context.Context, opts []Option, c call, name string, mk func(context.Context, engine.Engine, *options) (*Sandbox, error)) (_ *Sandbox, err error) {
	o, err := newOptions(opts, c, name)
	if err != nil {
		return nil, err
	}
	ctx, p := o.obs.begin(ctx, name, "")
	defer p.end(&err)
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
	p.setSandbox(s.ID())
	s.made = trace.SpanContextFromContext(ctx)
	if o.egress != nil {
		if err := s.startEgress(ctx, o.egress, o.egressPolicy); err != nil {
			if c == callAttach {
				s.Detach() // another process's sandbox: left as it is
				return nil, err
			}
			return nil, errors.Join(err, s.Close())
		}
	}
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
		return newDocker(ctx, o.client, false), false, nil
	}
	cli, err := docker.Dial(ctx, o.clientOpts)
	if err != nil {
		return nil, false, err
	}
	return newDocker(ctx, cli, true), true, nil
}

// newDocker is the Docker engine over a pinged client (own: its Close
// closes the client); a container whose creation failed is removed as
// Close removes one.
func newDocker(ctx context.Context, cli docker.API, own bool) *docker.Engine {
	d := docker.New(ctx, cli, own)
	d.Discard = func(id string) error { return (&Sandbox{id: id, eng: d}).remove() }
	return d
}

// pullOf is the Docker engine's pull policy for p.
func pullOf(p PullPolicy) docker.Pull {
	switch p {
	case PullAlways:
		return docker.PullAlways
	case PullNever:
		return docker.PullNever
	}
	return docker.PullMissing
}

// newSandbox returns the handle of the sandbox id on eng.
func newSandbox(id string, o *options, eng engine.Engine) *Sandbox {
	s := &Sandbox{id: id, opts: o, eng: eng, obs: o.obs}
	if d, ok := eng.(*docker.Engine); ok {
		s.dock, s.podman = d, d.Podman
	}
	if ec, ok := eng.(engine.ExecCopier); ok {
		s.copyByExec = ec.CopiesByExec()
	}
	return s
}

// startBound bounds what New does between creating the container and
// starting it: a container left "created" longer than that (plus
// ContainerCreate's own bound) was abandoned (see abandonedAfter).
const startBound = docker.StartBound

func init() {
	testhook.SetCloseBound = func(sb any, d time.Duration) { sb.(*Sandbox).removeFor = d }
}

// create makes the sandbox: on Docker the container, as createDocker
// does; on another engine, by the engine's Create.
func create(ctx context.Context, eng engine.Engine, o *options) (*Sandbox, error) {
	d, ok := eng.(*docker.Engine)
	if !ok {
		return createOn(ctx, eng, o)
	}
	return createDocker(ctx, d, o)
}

// createOn makes the sandbox with a non-Docker engine, which refuses the
// Docker-only options.
func createOn(ctx context.Context, eng engine.Engine, o *options) (*Sandbox, error) {
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

// createDocker makes the sandbox on Docker: the engine's Create, with the
// options only Docker has. A port socket is mounted for Dial where one can
// be used.
func createDocker(ctx context.Context, d *docker.Engine, o *options) (*Sandbox, error) {
	sweepAbandoned(ctx, d)
	var ps *portSocket // nil when Dial cannot use one
	x := docker.Creation{Pull: pullOf(o.pullPolicy), Progress: o.pullProgress, Configure: o.dockerOnly, StampCreated: LabelCreated}
	x.Configured = func(cfg *container.Config, host *container.HostConfig) error {
		if err := o.checkGVisor(host); err != nil {
			return err
		}
		if err := o.checkEgress(host); err != nil {
			return err
		}
		if ps = o.portSocket(d, host); ps != nil {
			host.Mounts = append(host.Mounts, ps.mount())
			cfg.Labels[labelPortsDir] = ps.parent
		}
		return nil
	}
	endFirst := func() *net.UnixConn { return nil }
	x.Share = func() (string, string) {
		if ps == nil {
			return "", ""
		}
		if !o.noChannel {
			endFirst = ps.expectFirst()
		}
		return ps.dir, portsDir
	}
	if vols := o.snap.volumes; len(vols) > 0 {
		x.Started = func(ctx context.Context, id string) error {
			return restoreVolumes(ctx, d.Client, id, o.image, vols)
		}
	}
	info, err := d.CreateWith(ctx, o.spec(), x)
	first := endFirst()
	if err != nil {
		if first != nil {
			first.Close()
		}
		if ps != nil {
			ps.close()
		}
		if o.runtime != "" && unknownRuntime(err) {
			return nil, fmt.Errorf("%w: WithRuntime(%q): the daemon has no such runtime (for gVisor, register runsc with the daemon: docs/engines.md): %w", ErrInvalidOption, o.runtime, err)
		}
		return nil, err
	}
	s := newSandbox(info.ID, o, d)
	s.ports, s.first = ps, first
	return s, nil
}

// unknownRuntime reports whether err is the daemon's refusal of a runtime
// it has not registered (Docker 20.10: "Unknown runtime specified"; later:
// "unknown or invalid runtime name").
func unknownRuntime(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown or invalid runtime name") || strings.Contains(msg, "unknown runtime specified")
}

// ID returns the container's short ID (12 hex characters), or the ID of
// the sandbox on another engine as that engine gives it (a pod's name).
func (s *Sandbox) ID() string { return shortID(s.id) }

// WorkingDir returns the directory commands run in and relative paths
// resolve against.
func (s *Sandbox) WorkingDir() string { return s.opts.workingDir }

// MaxOutputBytes returns the cap on the output Execute keeps (WithMaxOutputBytes).
func (s *Sandbox) MaxOutputBytes() int { return s.opts.maxOutputBytes }

// Close removes the container (or stops it, with WithAutoRemove(false)) and
// releases the Docker client if the sandbox made it. It returns within
// about 30 s, quickly in the usual case: the helper exits at once on
// SIGTERM. Calls in flight on the handle end with ErrClosed by the time it
// returns, whatever the engine does with their streams; later calls return
// ErrClosed too. Close does the same on a sandbox from Attach: it ends the
// container whoever made it. To let go of a handle and leave the container
// running, call Detach instead (a Close after Detach does nothing).
//
// A Close that fails can be called again until it succeeds (the daemon was
// unreachable: ErrDaemonUnreachable; its bound ended while the daemon was
// removing a large container: ErrStillRemoving, and the next Close waits
// for the removal to finish); once one succeeds, later calls return nil.
// Concurrent calls share one attempt.
func (s *Sandbox) Close() (err error) {
	op := s.beginDetached("Close")
	defer op.end(&err)
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
		s.stopEgress()
		s.closeChannel()
		s.closeExecs()
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
func (s *Sandbox) closeBound() time.Duration {
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
func (s *Sandbox) remove() error {
	bound := s.closeBound()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, bound-min(removeSettle, bound/2))
	defer rcancel()
	if p, ok := s.eng.(engine.Pauser); ok && s.opts != nil && s.opts.gvisor() && s.life.frozen.Load() {
		// gVisor holds a kill of a paused sandbox until its stop
		// timeout, and dockerd stops answering for a minute after:
		// thawed first, it dies at once.
		_ = p.Unpause(rctx, s.id)
	}
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
func (s *Sandbox) awaitRemoval(ctx context.Context, cause error) error {
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

func (s *Sandbox) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.closeBound())
	defer cancel()
	err := s.stopContainer(ctx, stopTimeout) // also a paused one (lifecycle.go)
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

// DockerEngine connects to a Docker daemon (or Podman's Docker-compatible
// API) and returns it as an engine, for WithEngine. opts configure the
// client (default: client.FromEnv, i.e. DOCKER_HOST, DOCKER_TLS_VERIFY,
// DOCKER_CERT_PATH); the daemon is pinged with API version negotiation,
// and a failure is ErrDaemonUnreachable. It is the one way to get the
// Docker engine as a value: New without WithEngine makes one of its own.
// The caller closes the engine; sandboxes made with it do not.
func DockerEngine(ctx context.Context, opts ...client.Opt) (engine.Engine, error) {
	cli, err := docker.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newDocker(ctx, cli, true), nil
}

// Where the helper lives in the container.
const (
	helperDir  = "/.dockersandbox"
	helperPath = helperDir + "/sandbox-helper"
)

// applySecureProfile fills in what WithSecureProfile implies, where other
// options left the setting open.
func (o *options) applySecureProfile() {
	if !o.secure {
		return
	}
	if o.user == "" {
		o.user = SecureUser
	}
	if o.networkMode == "" {
		o.networkMode = "none"
	}
	if o.pidsLimit == 0 {
		o.pidsLimit = SecurePidsLimit
	}
	if o.memory == 0 {
		o.memory = SecureMemory
	}
	o.capDrop = append(o.capDrop, "ALL")
	o.readOnlyRootfs = true
}

// spec translates the options into the engine-neutral spec (after
// applying the secure profile).
func (o *options) spec() *engine.Spec {
	o.applySecureProfile()
	if o.egress != nil {
		o.networkMode = "none" // the proxy is the way out (egress.go)
	}
	sp := &engine.Spec{
		Name:            o.name,
		Image:           o.image,
		Env:             o.env,
		WorkingDir:      o.workingDir,
		User:            o.user,
		Helper:          engine.Helper{Dir: helperDir, Path: helperPath, Binary: o.helperFor},
		Memory:          o.memory,
		NanoCPUs:        o.nanoCPUs,
		PidsLimit:       o.pidsLimit,
		NetworkNone:     o.networkMode == "none",
		ReadOnlyRootfs:  o.readOnlyRootfs,
		NoNewPrivileges: o.secure,
		CapDrop:         o.capDrop,
		StopGrace:       time.Second,
		// An abandoned sandbox that ends itself is also removed.
		RemoveOnExit: (o.lifetime > 0 || o.idleTimeout > 0) && o.autoRemove,
	}
	if o.secure {
		// Writable scratch space (where nothing else is mounted, on Docker).
		for _, dir := range []string{"/tmp", o.workingDir} {
			if dir != "/" {
				sp.ScratchDirs = append(sp.ScratchDirs, dir)
			}
		}
	} else if o.gvisor() {
		// gVisor mounts a tmpfs of its own on an empty /tmp, which the
		// engine's archive API (uploads, downloads) does not see: the
		// scratch volume the secure profile uses takes its place.
		sp.ScratchDirs = append(sp.ScratchDirs, "/tmp")
	}
	if o.egress != nil {
		sp.Env = append(slices.Clip(sp.Env), egressEnv()...)
	}
	// The helper is PID 1.
	sp.Command = []string{helperPath, "init"}
	if o.lifetime > 0 {
		sp.Command = append(sp.Command, "-lifetime", o.lifetime.String())
	}
	if o.idleTimeout > 0 {
		sp.Command = append(sp.Command, "-idle", o.idleTimeout.String())
	}
	if o.procsIdle {
		sp.Command = append(sp.Command, "-process-activity=false")
	}
	sp.Labels = o.containerLabels(time.Now())
	sp.Labels[LabelWorkingDir] = o.workingDir
	if o.egress != nil {
		sp.Labels[LabelEgress] = EgressProxyAddr
	}
	if o.snap.id != "" {
		sp.Labels[LabelFromSnapshot] = o.snap.id
	}
	return sp
}

// dockerOnly applies the options only Docker has (volumes, DNS, devices,
// GPUs, ulimits, runtime, shm size, a network other than "none",
// WithContainerConfig's functions, last).
func (o *options) dockerOnly(cfg *container.Config, host *container.HostConfig) {
	host.Binds = o.binds
	host.NetworkMode = container.NetworkMode(o.networkMode)
	host.DNS = o.dns
	host.ShmSize = o.shmSize
	host.Runtime = o.runtime
	host.Resources.Devices = o.devices
	host.Resources.Ulimits = o.ulimits
	if o.gpus != 0 {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver: "nvidia", Count: o.gpus, Capabilities: [][]string{{"gpu"}},
		}}
	}
	if o.secure {
		// Docker would create a WorkingDir on the tmpfs with mode 0755,
		// undoing mode=1777; requests carry the directory anyway.
		cfg.WorkingDir = ""
	}
	for _, fn := range o.configure {
		fn(cfg, host)
	}
}

// Attach returns the running sandbox with the given container ID or name,
// for example one created by another process that died. The options that
// choose the engine and tune the operations apply (WithEngine,
// WithExecuteTimeout, WithMaxOutputBytes, WithMaxDownloadBytes,
// WithAutoRemove, WithSharedChannel, WithAutoResume, WithAutoPause,
// WithStart); one that shapes a new container is ErrInvalidOption: the
// working directory and user are the container's. A
// container that is not a sandbox fails with ErrInvalidOption; one that is
// stopped, with ErrStopped (WithStart starts it first); one that is not
// running otherwise, with ErrGone. A paused one is attached paused (see
// Pause; WithAutoResume, WithAutoPause apply). On Docker the handle takes
// the container's OCI runtime from its inspect: under gVisor it does what
// one from New WithRuntime("runsc") does (Close thaws a paused sandbox
// first).
//
// The handle owns the container as one from New does: its Close removes
// the container (or stops it, with WithAutoRemove(false)). Call Detach
// instead to let go of the handle and leave the container running.
func Attach(ctx context.Context, idOrName string, opts ...Option) (*Sandbox, error) {
	return open(ctx, opts, callAttach, "Attach", func(ctx context.Context, eng engine.Engine, o *options) (*Sandbox, error) {
		return attach(ctx, eng, o, idOrName)
	})
}

func attach(ctx context.Context, eng engine.Engine, o *options, idOrName string) (*Sandbox, error) {
	c, runtime, err := inspectRuntime(ctx, eng, idOrName)
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
	if isGVisor(runtime) {
		// As WithRuntime would have said it: what the library does under
		// gVisor (Close thaws a paused sandbox first) holds for the
		// handle too. Another runtime is left unsaid, as New leaves the
		// daemon's default (a snapshot records none).
		o.runtime = runtime
	}
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

// inspectRuntime inspects the sandbox id, with its OCI runtime on Docker
// ("" on another engine, which has none to choose).
func inspectRuntime(ctx context.Context, eng engine.Engine, id string) (engine.Info, string, error) {
	if d, ok := eng.(*docker.Engine); ok {
		return d.InspectRuntime(ctx, id)
	}
	info, err := eng.Inspect(ctx, id)
	return info, "", err
}

// Detach lets go of the sandbox without touching its container: the
// container keeps running, with its files, for another
// handle to take (Attach, in this process or another one) or for Prune,
// its lifetime or its idle timeout to end. Use it for a handle from Attach
// that must not end the sandbox, and for a sandbox handed to another
// process (give it the ID first).
//
// Detach drops the handle's shared channel to the helper and releases the
// Docker client if the sandbox made it. Calls in flight on the shared
// channel (Execute without ExecOutput or ExecUser, file calls) end with
// ErrClosed and their commands are killed (as when their context ends); a
// Cmd from Command, on an exec of its own, runs on to its end. Later calls
// on the handle return ErrClosed, and a later Close returns nil and leaves
// the container alone, so
//
//	sb, err := sandbox.New(ctx)
//	...
//	defer sb.Close() // removes the container, unless it was handed over
//	...
//	handOver(sb.ID())
//	sb.Detach()
//
// keeps it on every path but the hand-over. Detach after Close, or during
// it, does nothing; it is safe to call more than once and concurrently.
func (s *Sandbox) Detach() {
	op := s.beginDetached("Detach")
	defer op.end(nil)
	s.closeMu.Lock()
	if s.closeDone || s.closing != nil {
		s.closeMu.Unlock()
		return
	}
	s.closeDone = true // a later Close has nothing to do
	s.closed.Store(true)
	s.closeMu.Unlock()
	s.stopAutoPause()
	s.stopEgress()
	s.closeChannel()
	s.detachPorts()
	if s.ownEngine {
		_ = s.eng.Close() // Docker's only drops idle connections
	}
}
