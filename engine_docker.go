package sandbox

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// dockerEngine is the Docker engine, Podman's Docker-compatible API
// included: the engine.Engine over a Docker client. The root package
// reaches what only Docker has (images, commits, volumes) through its
// client.
type dockerEngine struct {
	cli    dockerAPI
	own    bool // Close closes cli
	podman bool // the daemon is Podman's (see isPodman)
}

var (
	_ engine.Engine  = (*dockerEngine)(nil)
	_ engine.Pauser  = (*dockerEngine)(nil)
	_ engine.Stopper = (*dockerEngine)(nil)
)

// DockerEngine connects to a Docker daemon (or Podman's Docker-compatible
// API) and returns it as an engine, for WithEngine. opts configure the
// client (default: client.FromEnv, i.e. DOCKER_HOST, DOCKER_TLS_VERIFY,
// DOCKER_CERT_PATH); the daemon is pinged with API version negotiation,
// and a failure is ErrDaemonUnreachable. It is the one way to get the
// Docker engine as a value: New without WithEngine makes one of its own.
// The caller closes the engine; sandboxes made with it do not.
func DockerEngine(ctx context.Context, opts ...client.Opt) (engine.Engine, error) {
	cli, err := dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newDockerEngine(ctx, cli, true), nil
}

// dial makes a client with opts (default: from the environment) and pings it.
func dial(ctx context.Context, opts []client.Opt) (*client.Client, error) {
	if len(opts) == 0 {
		opts = []client.Opt{client.FromEnv}
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	return cli, nil
}

// newDockerEngine wraps a pinged client; own: Close closes it.
func newDockerEngine(ctx context.Context, cli dockerAPI, own bool) *dockerEngine {
	return &dockerEngine{cli: cli, own: own, podman: isPodman(ctx, cli)}
}

// Name returns "podman" on Podman, else "docker".
func (d *dockerEngine) Name() string {
	if d.podman {
		return "podman"
	}
	return "docker"
}

// Close closes the client if the engine made it.
func (d *dockerEngine) Close() error {
	if d.own {
		return d.cli.Close()
	}
	return nil
}

// Exec starts argv in the container, in "/", attached.
func (d *dockerEngine) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	ex, err := d.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User:         user,
		WorkingDir:   "/", // the working dir may have been deleted
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          argv,
	})
	if err != nil {
		return nil, classify(err)
	}
	att, err := d.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("attach: %w", classify(err))
	}
	return newDockerStream(att.HijackedResponse), nil
}

// Inspect describes the container.
func (d *dockerEngine) Inspect(ctx context.Context, id string) (engine.Info, error) {
	res, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return engine.Info{}, classify(err)
	}
	c := res.Container
	info := engine.Info{ID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), State: engine.StateUnknown}
	if c.Config != nil {
		info.Image, info.Labels, info.User, info.WorkingDir = c.Config.Image, c.Config.Labels, c.Config.User, c.Config.WorkingDir
		info.Command = append(append([]string(nil), c.Config.Entrypoint...), c.Config.Cmd...)
	}
	if s := c.State; s != nil {
		info.State, info.ExitCode = engine.State(s.Status), s.ExitCode
		if s.Paused {
			info.State = engine.StatePaused
		}
	}
	if h := c.HostConfig; h != nil {
		info.RemoveOnExit = h.AutoRemove
	}
	info.Created, _ = time.Parse(time.RFC3339Nano, c.Created)
	return info, nil
}

// List lists the containers, in any state, that carry labels.
func (d *dockerEngine) List(ctx context.Context, labels map[string]string) ([]engine.Info, error) {
	flt := make(client.Filters)
	for k, v := range labels {
		if v == "" {
			flt.Add("label", k)
		} else {
			flt.Add("label", k+"="+v)
		}
	}
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: flt})
	if err != nil {
		return nil, classify(err)
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
func (d *dockerEngine) Remove(ctx context.Context, id string) error {
	_, err := d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	switch {
	case isNotFound(err):
		return nil
	case client.IsErrConnectionFailed(err):
		return classify(err)
	}
	_, err = d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil || isNotFound(err):
		return nil
	case removing(err):
		return d.awaitGone(ctx, id, err)
	}
	return classify(err)
}

// awaitGone waits until the container no longer exists or ctx ends
// (an error wrapping ctx's); cause is why it waits.
func (d *dockerEngine) awaitGone(ctx context.Context, id string, cause error) error {
	for {
		_, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		switch {
		case isNotFound(err):
			return nil
		case client.IsErrConnectionFailed(err):
			return classify(err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v)", ctx.Err(), cause)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CopyTo extracts the archive into dir, through the archive API.
func (d *dockerEngine) CopyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	_, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dir, Content: tar})
	return archiveErr(err)
}

// CopyFrom reads an archive of path, through the archive API.
func (d *dockerEngine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	res, err := d.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
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
func (d *dockerEngine) Pause(ctx context.Context, id string) error {
	var err error
	for try, wait := 1, 50*time.Millisecond; ; try, wait = try+1, 2*wait {
		_, err = d.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		if err == nil || try == pauseTries || !strings.Contains(err.Error(), "unable to freeze") {
			break
		}
		select {
		case <-ctx.Done():
			return classify(err)
		case <-time.After(wait):
		}
	}
	return classify(err)
}

// pauseTries is how many times Pause asks for a freeze that runc gave up.
const pauseTries = 5

// Unpause thaws the container.
func (d *dockerEngine) Unpause(ctx context.Context, id string) error {
	_, err := d.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	return classify(err)
}

// Stop stops the container, killing it after grace (whole seconds).
func (d *dockerEngine) Stop(ctx context.Context, id string, grace time.Duration) error {
	timeout := int(grace / time.Second)
	_, err := d.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
	return classify(err)
}

// Start starts a stopped container.
func (d *dockerEngine) Start(ctx context.Context, id string) error {
	return d.start(ctx, id)
}

// Create makes and starts a container as spec says: the image (pulled if
// missing), the helper copied in before the start. On failure the
// container is removed.
func (d *dockerEngine) Create(ctx context.Context, spec *engine.Spec) (engine.Info, error) {
	arch, err := imageArch(ctx, d.cli, spec.Image, PullMissing, nil)
	if err != nil {
		return engine.Info{}, err
	}
	if spec.Helper.Binary == nil {
		return engine.Info{}, fmt.Errorf("%w: the spec has no helper binary", ErrInvalidOption)
	}
	bin, err := spec.Helper.Binary(arch)
	if err != nil {
		return engine.Info{}, fmt.Errorf("image %s: %w", spec.Image, err)
	}
	cfg, host := dockerConfig(spec, nil)
	id, err := d.createContainer(ctx, cfg, host, spec.Name)
	if err != nil {
		return engine.Info{}, err
	}
	err = ctx.Err()
	if err == nil {
		err = d.prepareAndStart(ctx, id, spec, bin)
	}
	if err == nil {
		var info engine.Info
		if info, err = d.Inspect(ctx, id); err == nil {
			info.Arch = arch
			return info, nil
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if rmErr := d.Remove(rctx, id); rmErr != nil {
		err = fmt.Errorf("%w (and removing the container failed: %v)", err, rmErr)
	}
	return engine.Info{}, err
}

// createContainer creates the container, not cancelled midway: a container
// the daemon made but whose ID never reached us would leak.
func (d *dockerEngine) createContainer(ctx context.Context, cfg *container.Config, host *container.HostConfig, name string) (string, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	created, err := d.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, Name: name})
	cancel()
	if err != nil {
		return "", fmt.Errorf("create container: %w", classify(err))
	}
	if afterCreate != nil {
		afterCreate(created.ID)
	}
	return created.ID, nil
}

// prepareAndStart puts the helper and the working directory into the
// created container, then starts it.
func (d *dockerEngine) prepareAndStart(ctx context.Context, id string, spec *engine.Spec, bin []byte) error {
	uid, gid, err := resolveUser(ctx, d.cli, id, spec.User)
	if err != nil {
		return classify(err)
	}
	if err := prepareFS(ctx, d.cli, id, spec, bin, uid, gid); err != nil {
		return classify(err)
	}
	if err := d.start(ctx, id); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}
