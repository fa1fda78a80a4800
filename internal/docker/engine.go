// Package docker is the Docker engine, Podman's Docker-compatible API
// included: the engine.Engine over moby's client, the one way a container
// is made on it (Engine.CreateWith, for the engine's Create and the
// sandbox package's New), and what classifies the daemon's errors as the
// engine package's sentinels. The sandbox package returns it from
// DockerEngine and reaches what only Docker has (images, commits,
// volumes) through Engine.Client.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Engine is the Docker engine, Podman's Docker-compatible API
// included: the engine.Engine over a Docker client. The sandbox package
// reaches what only Docker has (images, commits, volumes) through Client.
type Engine struct {
	// Client is the daemon's client.
	Client API
	// Podman says the daemon is Podman's (see IsPodman).
	Podman bool
	// Discard removes a container whose creation failed, within its own
	// bound; nil: Remove within createBound.
	Discard func(id string) error

	own bool // Close closes Client

	netSwap atomic.Int32 // Podman before 4.4 swaps rx and tx (usage.go): 0 not known yet, 1 no, 2 yes

	unpaused sync.Map // container ID → time.Time of its last Unpause (see staleFreeze)
}

var (
	_ engine.Engine  = (*Engine)(nil)
	_ engine.Pauser  = (*Engine)(nil)
	_ engine.Stopper = (*Engine)(nil)
)

// Dial makes a client with opts (default: from the environment) and pings it.
func Dial(ctx context.Context, opts []client.Opt) (*client.Client, error) {
	if len(opts) == 0 {
		opts = []client.Opt{client.FromEnv}
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The caller's context ended: errors.Is says so too.
			return nil, fmt.Errorf("%w: %w", ErrDaemonUnreachable, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	return cli, nil
}

// New wraps a pinged client; own: Close closes it.
func New(ctx context.Context, cli API, own bool) *Engine {
	return &Engine{Client: cli, own: own, Podman: IsPodman(ctx, cli)}
}

// Name returns "podman" on Podman, else "docker".
func (d *Engine) Name() string {
	if d.Podman {
		return "podman"
	}
	return "docker"
}

// Close closes the client if the engine made it.
func (d *Engine) Close() error {
	if d.own {
		return d.Client.Close()
	}
	return nil
}

// Exec starts argv in the container, in "/", attached.
func (d *Engine) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	opts := client.ExecCreateOptions{
		User:         user,
		WorkingDir:   "/", // the working dir may have been deleted
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          argv,
	}
	ex, err := d.Client.ExecCreate(ctx, id, opts)
	for wait := 10 * time.Millisecond; err != nil && d.staleFreeze(id, Classify(err)); wait = min(2*wait, 200*time.Millisecond) {
		select {
		case <-ctx.Done():
			return nil, Classify(err)
		case <-time.After(wait):
		}
		ex, err = d.Client.ExecCreate(ctx, id, opts)
	}
	if err != nil {
		return nil, Classify(err)
	}
	att, err := d.Client.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("attach: %w", Classify(err))
	}
	return newDockerStream(att.HijackedResponse), nil
}

// Ping asks the daemon its cheapest question (_ping), which takes no lock
// of a container: how long it takes tells a stalled daemon from a busy one.
func (d *Engine) Ping(ctx context.Context) error {
	_, err := d.Client.Ping(ctx, client.PingOptions{})
	return Classify(err)
}

// Inspect describes the container.
func (d *Engine) Inspect(ctx context.Context, id string) (engine.Info, error) {
	info, _, err := d.InspectRuntime(ctx, id)
	return info, err
}

// InspectRuntime is Inspect, with the OCI runtime the container runs
// under (its HostConfig.Runtime: the daemon's default runtime, "runc" on
// Docker, when none was asked for; "" if the daemon does not say).
func (d *Engine) InspectRuntime(ctx context.Context, id string) (engine.Info, string, error) {
	res, err := d.Client.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return engine.Info{}, "", Classify(err)
	}
	var runtime string
	c := res.Container
	info := engine.Info{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), State: engine.StateUnknown}
	if c.Config != nil {
		info.Image, info.Labels, info.User, info.WorkingDir = c.Config.Image, c.Config.Labels, c.Config.User, c.Config.WorkingDir
		info.Command = bootedCommand(append(append([]string(nil), c.Config.Entrypoint...), c.Config.Cmd...))
	}
	if s := c.State; s != nil {
		info.State, info.ExitCode = engine.State(s.Status), s.ExitCode
		if s.Paused {
			info.State = engine.StatePaused
		}
	}
	if h := c.HostConfig; h != nil {
		info.RemoveOnExit, runtime = h.AutoRemove, h.Runtime
	}
	info.Created, _ = time.Parse(time.RFC3339Nano, c.Created)
	return info, runtime, nil
}

// List lists the containers, in any state, that carry labels.
func (d *Engine) List(ctx context.Context, labels map[string]string) ([]engine.Info, error) {
	flt := make(client.Filters)
	for k, v := range labels {
		if v == "" {
			flt.Add("label", k)
		} else {
			flt.Add("label", k+"="+v)
		}
	}
	list, err := d.Client.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: flt})
	if err != nil {
		return nil, Classify(err)
	}
	out := make([]engine.Info, 0, len(list.Items))
	for _, c := range list.Items {
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		state := engine.State(c.State)
		out = append(out, engine.Info{ID: c.ID, Name: name, Image: c.Image, Labels: c.Labels, State: state,
			Created: time.Unix(c.Created, 0)})
	}
	return out, nil
}

// Remove kills the container, then removes it with its anonymous volumes.
// The daemon removes a container whatever becomes of the request (moby's
// ContainerRm takes no context, Docker 20.10 through 29); when another
// removal is in progress (an earlier one's, or Docker's auto-remove),
// Remove waits for the container to disappear within ctx. (The kill comes
// first so that the container's state says "removing" while it is
// removed: a running one says "running".)
func (d *Engine) Remove(ctx context.Context, id string) error {
	d.unpaused.Delete(id)
	_, err := d.Client.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	switch {
	case IsNotFound(err):
		return nil
	case client.IsErrConnectionFailed(err):
		return Classify(err)
	}
	_, err = d.Client.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil || IsNotFound(err):
		return nil
	case Removing(err):
		return d.awaitGone(ctx, id, err)
	}
	return Classify(err)
}

// awaitGone waits until the container no longer exists or ctx ends
// (an error wrapping ctx's); cause is why it waits.
func (d *Engine) awaitGone(ctx context.Context, id string, cause error) error {
	for {
		_, err := d.Client.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		switch {
		case IsNotFound(err):
			return nil
		case client.IsErrConnectionFailed(err):
			return Classify(err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v)", ctx.Err(), cause)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CopyTo extracts the archive into dir, through the archive API.
func (d *Engine) CopyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	_, err := d.Client.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dir, Content: tar})
	return archiveErr(err)
}

// CopyFrom reads an archive of path, through the archive API.
func (d *Engine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	res, err := d.Client.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, archiveErr(err)
	}
	return res.Content, nil
}

// Pause freezes the container.
//
// runc gives up a freeze that does not settle ("unable to freeze": seen
// on a loaded machine with processes forking in the container); the thaw
// is complete then, and the pause is tried again, up to pauseTries times
// within ctx.
func (d *Engine) Pause(ctx context.Context, id string) error {
	var err error
	for try, wait := 1, 50*time.Millisecond; ; try, wait = try+1, 2*wait {
		_, err = d.Client.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		if err == nil {
			d.unpaused.Delete(id) // a pause now is no stale one
			break
		}
		if try == pauseTries || !strings.Contains(err.Error(), "unable to freeze") {
			break
		}
		select {
		case <-ctx.Done():
			return Classify(err)
		case <-time.After(wait):
		}
	}
	return Classify(err)
}

// pauseTries is how many times Pause asks for a freeze that runc gave up.
const pauseTries = 5

// Unpause thaws the container.
func (d *Engine) Unpause(ctx context.Context, id string) error {
	_, err := d.Client.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	if err == nil {
		d.unpaused.Store(id, time.Now())
	}
	return Classify(err)
}

// staleFreezeWindow is how long after an Unpause Exec takes the daemon's
// "is paused" for a stale state and asks again.
const staleFreezeWindow = 5 * time.Second

// staleFreeze says whether err, an Exec's, is a pause the daemon reports
// for a container this engine thawed less than staleFreezeWindow ago.
//
// Docker (20.10 and later) marks a container paused when its pause call
// returns, and again when containerd's pause event reaches the daemon's
// event queue; that event can arrive after the Unpause that followed has
// returned (seen under gVisor, whose pause is slow, on a loaded machine),
// and the container reads as paused until the resume event follows it.
func (d *Engine) staleFreeze(id string, err error) bool {
	if !errors.Is(err, engine.ErrPaused) {
		return false
	}
	v, ok := d.unpaused.Load(id)
	if !ok {
		return false
	}
	if time.Since(v.(time.Time)) >= staleFreezeWindow {
		d.unpaused.CompareAndDelete(id, v)
		return false
	}
	return true
}

// Stop stops the container, killing it after grace (whole seconds).
func (d *Engine) Stop(ctx context.Context, id string, grace time.Duration) error {
	timeout := int(grace / time.Second)
	_, err := d.Client.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
	return Classify(err)
}

// Start starts a stopped container.
func (d *Engine) Start(ctx context.Context, id string) error {
	return d.start(ctx, id, false)
}

// Create makes and starts a container as spec says: the image (pulled if
// missing), the helper copied in before the start. On failure the
// container is removed.
func (d *Engine) Create(ctx context.Context, spec *engine.Spec) (engine.Info, error) {
	return d.CreateWith(ctx, spec, Creation{})
}

// Creation is what the sandbox package's New adds on Docker to the spec
// that Create takes: the options only Docker has. Its zero value is
// Create's.
type Creation struct {
	Pull      Pull
	Progress  io.Writer                                      // pull progress; nil: none
	Configure func(*container.Config, *container.HostConfig) // the Docker-only options; nil: none
	// Configured runs once the configuration is whole (the port socket's
	// mount); an error it returns is CreateWith's, before anything is
	// made. nil: none.
	Configured func(*container.Config, *container.HostConfig) error
	// StampCreated, if not "", is a label set to each try's time (New's
	// sweep takes a sandbox never started for long as abandoned); Create
	// keeps the spec's labels as they are.
	StampCreated string
	Started      func(ctx context.Context, id string) error // after the start (a snapshot's volumes); nil: none
	// Share, if not nil, returns a directory of this machine the
	// container mounts (read-only) at target, once Configured ran; ""
	// if none. The helper is written there, as SharedHelper: a container
	// that can boot (boot.go) boots from it, and the library runs it to
	// open its shared channel over a socket.
	Share func() (dir, target string)
}

// CreateWith is the one way a container is made on Docker, for Create
// and New: the image made available as x.Pull says, the configuration (with
// x's), then create, prepare and start, retried with a lower limit when
// the daemon refuses one of the ulimits (see adaptUlimits). A container
// that fails on the way is removed.
func (d *Engine) CreateWith(ctx context.Context, spec *engine.Spec, x Creation) (engine.Info, error) {
	arch, imageUser, err := imageArch(ctx, d.Client, spec.Image, x.Pull, x.Progress)
	if err != nil {
		return engine.Info{}, err
	}
	if spec.Helper.Binary == nil {
		return engine.Info{}, errors.New("docker: the spec has no helper binary")
	}
	bin, err := spec.Helper.Binary(arch)
	if err != nil {
		return engine.Info{}, fmt.Errorf("sandbox: image %s: %w", spec.Image, err)
	}
	cfg, host := Config(spec, x.Configure)
	if x.Configured != nil {
		if err := x.Configured(cfg, host); err != nil {
			return engine.Info{}, err
		}
	}
	boot := false
	if x.Share != nil {
		if dir, target := x.Share(); dir != "" {
			if err := WriteShared(filepath.Join(dir, SharedHelper), bin, 0o755); err != nil {
				return engine.Info{}, fmt.Errorf("sandbox: write the helper to share with the container: %w", err)
			}
			if bootable(spec, imageUser) {
				cfg.Entrypoint, boot = bootEntrypoint(spec, target), true
			}
		}
	}
	tries := map[string]int{} // limits lowered after a refusal, by name
	for {
		if x.StampCreated != "" {
			cfg.Labels[x.StampCreated] = time.Now().UTC().Format(time.RFC3339)
		}
		info, err := d.createOnce(ctx, spec, cfg, host, bin, boot, x.Started)
		if err == nil {
			info.Arch = arch
			return info, nil
		}
		retry, err := adaptUlimits(host, tries, err)
		if !retry {
			return engine.Info{}, err
		}
	}
}

// createOnce creates, prepares and starts the container (one that boots
// needs no preparing), and removes it if that fails.
func (d *Engine) createOnce(ctx context.Context, spec *engine.Spec, cfg *container.Config, host *container.HostConfig, bin []byte, boot bool, started func(context.Context, string) error) (engine.Info, error) {
	id, err := d.createContainer(ctx, cfg, host, spec.Name)
	if err != nil {
		return engine.Info{}, fmt.Errorf("sandbox: %w", DaemonErr(err))
	}
	err = ctx.Err()
	if err == nil {
		sctx, cancel := context.WithTimeout(ctx, StartBound)
		defer cancel()
		if boot {
			if err = d.start(sctx, id, true); err != nil {
				err = fmt.Errorf("start container: %w", err)
			}
		} else {
			err = d.prepareAndStart(sctx, id, spec, bin)
		}
		if err == nil && started != nil {
			err = started(sctx, id)
		}
		if err != nil {
			err = fmt.Errorf("sandbox: %w", DaemonErr(err))
		}
	}
	if err == nil {
		var info engine.Info
		if info, err = d.Inspect(ctx, id); err == nil {
			return info, nil
		}
	}
	if rmErr := d.discard(id); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("sandbox: remove container %s after the failure: %w", shortID(id), rmErr))
	}
	return engine.Info{}, err
}

// createContainer creates the container, not cancelled midway: a container
// the daemon made but whose ID never reached us would leak.
func (d *Engine) createContainer(ctx context.Context, cfg *container.Config, host *container.HostConfig, name string) (string, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createBound)
	created, err := d.Client.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, Name: name})
	cancel()
	if err != nil {
		return "", fmt.Errorf("create container: %w", Classify(err))
	}
	if f := testhook.AfterCreate; f != nil { // a test process crashes itself there
		f(created.ID)
	}
	return created.ID, nil
}

// prepareAndStart puts the helper and the working directory into the
// created container, then starts it.
func (d *Engine) prepareAndStart(ctx context.Context, id string, spec *engine.Spec, bin []byte) error {
	uid, gid, err := ResolveUser(ctx, ContainerCopy(d.Client, id), spec.User)
	if err != nil {
		return Classify(err)
	}
	if err := prepareFS(ctx, d.Client, id, spec, bin, uid, gid); err != nil {
		return Classify(err)
	}
	if err := d.start(ctx, id, false); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// local reports whether the daemon runs on this machine: the client
// reaches it on a unix socket.
func (d *Engine) Local() bool {
	h, ok := d.Client.(interface{ DaemonHost() string })
	return ok && strings.HasPrefix(h.DaemonHost(), "unix://")
}

// StartBound bounds what a creation does between creating the container
// and starting it (copying the helper in, reading the image's user
// database, the start itself): a container left "created" longer than
// that (plus createBound) was abandoned.
const StartBound = 2 * time.Minute

// createBound bounds the daemon's ContainerCreate (not cancelled midway)
// and the removal of a container whose creation failed.
const createBound = 30 * time.Second

// discard removes the container id after a failed creation.
func (d *Engine) discard(id string) error {
	if d.Discard != nil {
		return d.Discard(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), createBound)
	defer cancel()
	return d.Remove(ctx, id)
}

// shortID is a container ID's first 12 characters.
func shortID(id string) string {
	if len(id) == 64 && strings.Trim(id, "0123456789abcdef") == "" {
		return id[:12]
	}
	return id
}
