package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/tarx"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Labels on every snapshot image (besides LabelCreated and LabelOwner,
// which a snapshot carries as a sandbox does).
const (
	// LabelSnapshot marks an image as a snapshot; its value is "true".
	LabelSnapshot = labelPrefix + "snapshot"
	// LabelSnapshotOptions holds, as JSON, the options of the sandbox
	// the snapshot was taken of (WithSnapshot applies them again).
	LabelSnapshotOptions = labelPrefix + "options"
	// LabelSnapshotOf holds the ID of the container the snapshot was taken of.
	LabelSnapshotOf = labelPrefix + "snapshot-of"
	// LabelFromSnapshot, on a sandbox's container, holds the ID of the
	// snapshot it was made from.
	LabelFromSnapshot = labelPrefix + "from-snapshot"
)

// snapshotRepo is the repository snapshots are tagged in, so that
// "docker image prune" (dangling images) leaves them alone.
const snapshotRepo = "dockersandbox-snapshot"

// volumeStore is where a snapshot's image holds the content of the
// volumes it recorded (their paths below it); a sandbox made from it
// gets them copied back into place after its start.
const volumeStore = "/.dockersandbox-snapshot"

// restoreVolumes copies the recorded content of the volumes dirs from
// volumeStore into place, in the started container id made from the
// snapshot image. It reads them from another container, created (never
// started) from the image and removed after: the engine would not stream
// an archive out of a container and into the same one at once.
func restoreVolumes(ctx context.Context, cli docker.API, id, image string, dirs []string) error {
	if len(dirs) == 0 {
		return nil
	}
	src, err := createScratch(ctx, cli, image)
	if err != nil {
		return fmt.Errorf("restore the snapshot's volumes: %w", err)
	}
	defer removeScratch(cli, src)
	for _, dir := range dirs {
		wctx, prog, stop := watchProgress(ctx)
		rc, err := cli.CopyFromContainer(wctx, src, client.CopyFromContainerOptions{SourcePath: volumeStore + dir})
		if err != nil {
			stop()
			return fmt.Errorf("restore the snapshot's %s: %w", dir, stalled(ctx, wctx, err))
		}
		// Into dir itself: a read-only root filesystem refuses extraction
		// into its parent, even of entries that land in the volume.
		base := path.Base(dir)
		inner := tarx.Check(prog.reader(rc.Content), tarx.Policy{LinksOut: true, MkdirMode: 0o755,
			Rename: func(name string) (string, bool, error) {
				name = strings.TrimPrefix(name, "./")
				if name == base || name == base+"/" {
					return "", false, nil // the mount point keeps its own mode
				}
				if !strings.HasPrefix(name, base+"/") {
					return "", false, fmt.Errorf("%w: not under %q", ErrUnsafeArchive, base)
				}
				return name[len(base)+1:], true, nil
			}})
		_, err = cli.CopyToContainer(wctx, id, client.CopyToContainerOptions{DestinationPath: dir, Content: inner})
		inner.Close()
		rc.Content.Close()
		err = stalled(ctx, wctx, err)
		stop()
		if err != nil {
			return fmt.Errorf("restore the snapshot's %s: %w", dir, err)
		}
	}
	return nil
}

// A Snapshot is a sandbox's filesystem and options recorded as a labelled
// image on the engine (see Sandbox.Snapshot). It lives until Remove
// or PruneSnapshots removes it, whatever becomes of the sandbox and of the
// process that took it.
type Snapshot struct {
	ID      string    // the image ID, "sha256:…"
	Ref     string    // the image's tag, dockersandbox-snapshot:<name>
	Created time.Time // from LabelCreated
	Owner   string    // LabelOwner
	Labels  map[string]string

	conn []Option // the options that reach the engine the snapshot is on

	// obs records Remove and Fork, as calls on the sandbox from (its ID)
	// the snapshot was taken of; nil for one found by ListSnapshots or
	// LookupSnapshot.
	obs  *observer
	from string
}

// A SnapshotOption configures Sandbox.Snapshot.
type SnapshotOption func(*snapshotConfig) error

type snapshotConfig struct {
	labels  map[string]string
	owner   string
	volumes bool
}

// SnapshotLabels adds labels to the snapshot's image. Keys under
// "com.dockersandbox." are the library's and are refused.
func SnapshotLabels(labels map[string]string) SnapshotOption {
	return func(c *snapshotConfig) error {
		for k := range labels {
			if k == "" || strings.HasPrefix(k, labelPrefix) {
				return fmt.Errorf("label %q is empty or reserved", k)
			}
		}
		if c.labels == nil {
			c.labels = map[string]string{}
		}
		for k, v := range labels {
			c.labels[k] = v
		}
		return nil
	}
}

// SnapshotOwner sets the snapshot's LabelOwner (default "<hostname>:<pid>"
// of this process). Filter.DeadOwners selects snapshots whose owning
// process is gone; a snapshot meant to outlive its process can carry
// another owner, as WithOwner does for sandboxes.
func SnapshotOwner(owner string) SnapshotOption {
	return func(c *snapshotConfig) error {
		if strings.TrimSpace(owner) == "" {
			return fmt.Errorf("empty owner")
		}
		c.owner = owner
		return nil
	}
}

// SnapshotVolumes says whether the content of named volumes mounted in the
// sandbox is recorded too (default false). Host directories mounted with
// WithVolumes are never recorded.
func SnapshotVolumes(include bool) SnapshotOption {
	return func(c *snapshotConfig) error {
		c.volumes = include
		return nil
	}
}

// snapshotAPI is what snapshots need of the client beyond docker.API;
// *client.Client has it.
type snapshotAPI interface {
	docker.API
	ContainerCommit(ctx context.Context, id string, options client.ContainerCommitOptions) (client.ContainerCommitResult, error)
	ImageRemove(ctx context.Context, image string, options client.ImageRemoveOptions) (client.ImageRemoveResult, error)
	ImageList(ctx context.Context, options client.ImageListOptions) (client.ImageListResult, error)
}

func snapshotClient(cli docker.API) (snapshotAPI, error) {
	sc, ok := cli.(snapshotAPI)
	if !ok {
		return nil, fmt.Errorf("%w: the Docker client cannot commit or list images", ErrInvalidOption)
	}
	return sc, nil
}

// snapshotBound bounds Snapshot when its context has no deadline: a commit
// of a large filesystem takes time, a frozen engine never answers.
// (A test lowers it: testhook.SnapshotBound.)
const snapshotBound = 10 * time.Minute

// Snapshot records the sandbox's filesystem as a labelled image on its
// engine: the root filesystem by docker commit (the sandbox is paused
// meanwhile), then the content of the volumes docker commit leaves out —
// the in-memory working directory and /tmp of WithSecureProfile, and named
// volumes with SnapshotVolumes(true) — copied through the archive API into
// one more layer. Host directories mounted with WithVolumes are not
// recorded. The volumes are copied after the commit, with the sandbox
// running: stop writing to them while a snapshot is taken. The sandbox's
// options are recorded in the image's labels (LabelSnapshotOptions), so
// that New(ctx, WithSnapshot(snap)) and snap.Fork make sandboxes like it.
//
// A snapshot of a sandbox made from a snapshot works (chains); each
// generation adds a layer of what changed in the root filesystem, and one
// holding the whole content of the recorded volumes.
//
// Without a deadline on ctx, Snapshot gives up after 10 minutes.
//
// If Snapshot fails, or its process dies midway, what it made carries the
// library's labels: PruneSnapshots and Prune with Filter.DeadOwners find
// it.
func (s *Sandbox) Snapshot(ctx context.Context, opts ...SnapshotOption) (_ *Snapshot, err error) {
	ctx, op := s.begin(ctx, "Snapshot")
	defer op.end(&err)
	var c snapshotConfig
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&c); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		bound := snapshotBound
		if d := testhook.SnapshotBound.Load(); d > 0 {
			bound = time.Duration(d)
		}
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	d, err := dockerOf(s.eng, "Snapshot")
	if err != nil {
		return nil, err
	}
	cli, err := snapshotClient(d.Client)
	if err != nil {
		return nil, err
	}
	info, err := cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, s.dockerErr("snapshot", err)
	}
	dirs := snapshotMounts(info.Container.Mounts, c.volumes)

	rec := recordOptions(s.opts)
	rec.Volumes = dirs
	if hc := info.Container.HostConfig; hc != nil && hc.NetworkMode == "none" {
		// A fork has no network where this sandbox has none, whatever the
		// handle knows of it: one from Attach does not know WithEgress's.
		rec.NetworkMode = "none"
	}
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	labels := map[string]string{}
	for k, v := range c.labels {
		labels[k] = v
	}
	labels[LabelSnapshot] = "true"
	labels[LabelCreated] = now.Format(time.RFC3339)
	labels[LabelOwner] = ownerLabel()
	if c.owner != "" {
		labels[LabelOwner] = c.owner
	}
	labels[LabelSnapshotOptions] = string(recJSON)
	labels[LabelSnapshotOf] = s.id
	name := snapshotName(now)
	ref := snapshotRepo + ":" + name

	first, err := s.commit(ctx, cli, s.id, labels, client.ContainerCommitOptions{
		Comment: "dockersandbox snapshot of " + s.ID(),
		Reference: func() string {
			if len(dirs) == 0 {
				return ref
			}
			return ""
		}(),
	})
	if err != nil {
		return nil, s.dockerErr("snapshot: commit", err)
	}
	id := first
	if len(dirs) > 0 {
		// testhook.AfterSnapshotCommit, set by tests only: a test process
		// crashes itself there.
		if f := testhook.AfterSnapshotCommit; f != nil {
			f(id)
		}
		id, err = s.addVolumes(ctx, cli, first, dirs, labels, ref)
		// The first image is the second's parent: on a graph-driver store
		// it stays (untagged) until the snapshot is removed; elsewhere it
		// goes now.
		removeImageQuietly(cli, first)
		if err != nil {
			return nil, err
		}
	}
	op.str("sandbox.snapshot", shortImageID(id))
	return &Snapshot{ID: id, Ref: ref, Created: now.Truncate(time.Second), Owner: labels[LabelOwner], Labels: labels, conn: s.connOptions(),
		obs: s.obs, from: s.ID()}, nil
}

// addVolumes makes the snapshot's last layer: a container created (never
// started) from base, the content of dirs copied into it from the sandbox
// through the archive API, then committed as ref. The container is removed.
func (s *Sandbox) addVolumes(ctx context.Context, cli snapshotAPI, base string, dirs []string, labels map[string]string, ref string) (string, error) {
	tmp, err := createScratch(ctx, cli, base)
	if err != nil {
		return "", s.dockerErr("snapshot: create a container to copy the volumes into", err)
	}
	defer removeScratch(cli, tmp)
	for _, dir := range dirs {
		if err := s.copyDir(ctx, cli, tmp, dir); err != nil {
			return "", err
		}
	}
	id, err := s.commit(ctx, cli, tmp, labels, client.ContainerCommitOptions{
		Reference: ref, Comment: "dockersandbox snapshot of " + s.ID() + ": volumes " + strings.Join(dirs, " "),
	})
	if err != nil {
		return "", s.dockerErr("snapshot: commit the volumes", err)
	}
	return id, nil
}

// commit commits the container ctr as an image carrying labels and
// returns its ID. Podman 4.3 ignores the labels of the commit's config:
// there they go as LABEL changes too, and the image is checked to carry
// them exactly (Podman strips quotes around a value), else it is removed
// and the snapshot refused.
func (s *Sandbox) commit(ctx context.Context, cli snapshotAPI, ctr string, labels map[string]string, opts client.ContainerCommitOptions) (string, error) {
	opts.Config = &container.Config{Labels: labels}
	if s.podman {
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			opts.Changes = append(opts.Changes, "LABEL "+k+"="+labels[k])
		}
	}
	res, err := cli.ContainerCommit(ctx, ctr, opts)
	res.ID = imageID(res.ID)
	if err != nil || !s.podman {
		return res.ID, err
	}
	img, err := cli.ImageInspect(ctx, res.ID)
	if err != nil {
		removeImageQuietly(cli, res.ID)
		return "", err
	}
	var got map[string]string
	if img.Config != nil {
		got = img.Config.Labels
	}
	for k, v := range labels {
		if got[k] != v {
			removeImageQuietly(cli, res.ID)
			return "", fmt.Errorf("%w: the engine recorded label %q as %q, not %q", ErrInvalidOption, k, got[k], v)
		}
	}
	return res.ID, nil
}

// createScratch creates (never starts) a container from image, to copy
// files into or out of; it carries the library's labels, so that Prune
// finds it if its process dies before removeScratch.
func createScratch(ctx context.Context, cli docker.API, image string) (string, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	labels := map[string]string{LabelSandbox: "true", LabelOwner: ownerLabel(), LabelCreated: time.Now().UTC().Format(time.RFC3339)}
	created, err := cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Labels: labels, Entrypoint: []string{helperPath}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return "", err
	}
	return created.ID, nil
}

// removeScratch removes a container of createScratch.
func removeScratch(cli docker.API, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, _ = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
}

// copyDir streams the directory dir of the sandbox into the container dst.
func (s *Sandbox) copyDir(ctx context.Context, cli snapshotAPI, dst, dir string) error {
	wctx, prog, stop := watchProgress(ctx)
	defer stop()
	rc, err := cli.CopyFromContainer(wctx, s.id, client.CopyFromContainerOptions{SourcePath: dir})
	if err != nil {
		return s.dockerErr("snapshot: read "+dir, stalled(ctx, wctx, err))
	}
	defer rc.Content.Close()
	// Stored aside (under volumeStore): in a sandbox made from the
	// snapshot, a volume mounted at dir hides the image's content there.
	base := path.Base(dir)
	moved := tarx.Check(prog.reader(rc.Content), tarx.Policy{LinksOut: true, MkdirMode: 0o755,
		Rename: func(name string) (string, bool, error) {
			name = strings.TrimPrefix(name, "./")
			if name != base && !strings.HasPrefix(name, base+"/") {
				return "", false, fmt.Errorf("%w: not under %q", ErrUnsafeArchive, base)
			}
			return path.Join(volumeStore[1:]+path.Dir(dir), name), true, nil
		}})
	defer moved.Close()
	_, err = cli.CopyToContainer(wctx, dst, client.CopyToContainerOptions{DestinationPath: "/", Content: moved})
	if err != nil {
		return s.dockerErr("snapshot: copy "+dir, stalled(ctx, wctx, err))
	}
	return nil
}

// snapshotMounts returns the mount points whose content docker commit
// leaves out and a snapshot records: the anonymous volumes (the secure
// profile's in-memory working directory and /tmp) except the helper's,
// and named volumes when volumes is set. Host directories are left out.
func snapshotMounts(mounts []container.MountPoint, volumes bool) []string {
	var dirs []string
	for _, m := range mounts {
		if m.Type != mount.TypeVolume || m.Destination == helperDir || m.Destination == "/" {
			continue
		}
		if anonymousVolume(m.Name) || volumes {
			dirs = append(dirs, path.Clean(m.Destination))
		}
	}
	slices.Sort(dirs)
	return dirs
}

// anonymousVolume reports whether name is an anonymous volume's: 64 hex
// digits, as Docker and Podman name them.
func anonymousVolume(name string) bool {
	if len(name) != 64 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil
}

// snapshotName is the tag of a new snapshot: its time and a random part.
func snapshotName(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// removeImageQuietly removes an image, ignoring failures (an image that
// is another's parent stays until that one goes).
func removeImageQuietly(cli snapshotAPI, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, _ = cli.ImageRemove(ctx, id, client.ImageRemoveOptions{PruneChildren: true})
}

// connOptions returns the options that reach the sandbox's engine.
func (s *Sandbox) connOptions() []Option {
	switch {
	case s.opts.engine != nil:
		return []Option{WithEngine(s.opts.engine)}
	case s.opts.client != nil:
		return []Option{WithClient(s.opts.client)}
	case len(s.opts.clientOpts) > 0:
		return []Option{WithClientOptions(s.opts.clientOpts...)}
	}
	return nil
}

// Remove removes the snapshot's image (with the untagged images below it
// that Snapshot made). The engine refuses while a container made from it
// exists: close its sandboxes first. A snapshot removed already is not an
// error.
func (snap *Snapshot) Remove(ctx context.Context) (err error) {
	ctx, op := snap.begin(ctx, "Snapshot.Remove")
	defer op.end(&err)
	return withSnapshotClient(ctx, snap.conn, "Snapshot.Remove", func(cli snapshotAPI) error {
		return removeSnapshot(ctx, cli, snap.ID)
	})
}

// begin starts observing the snapshot's call name as one on the sandbox
// it was taken of, with the snapshot's ID.
func (snap *Snapshot) begin(ctx context.Context, name string) (context.Context, *op) {
	ctx, op := snap.obs.begin(ctx, name, snap.from)
	op.str("sandbox.snapshot", shortImageID(snap.ID))
	return ctx, op
}

// removeSnapshot removes the image id with its tags and untagged parents.
func removeSnapshot(ctx context.Context, cli snapshotAPI, id string) error {
	_, err := cli.ImageRemove(ctx, id, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !docker.IsNotFound(err) {
		return fmt.Errorf("sandbox: remove snapshot %s: %w", shortImageID(id), daemonErr(err))
	}
	return nil
}

// withSnapshotClient connects with opts and calls fn.
func withSnapshotClient(ctx context.Context, opts []Option, name string, fn func(snapshotAPI) error) error {
	o, err := newOptions(opts, callEngine, name)
	if err != nil {
		return err
	}
	eng, own, err := connect(ctx, o)
	if err != nil {
		return err
	}
	if own {
		defer eng.Close()
	}
	d, err := dockerOf(eng, "a snapshot")
	if err != nil {
		return err
	}
	sc, err := snapshotClient(d.Client)
	if err != nil {
		return err
	}
	return fn(sc)
}

// shortImageID returns the first 12 hex digits of an image ID.
func shortImageID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

var errNoSnapshot = errors.New("sandbox: not a snapshot")

// snapshotRecord is what a snapshot records of its sandbox's options
// (LabelSnapshotOptions), for WithSnapshot. The Docker client, the
// container name, host directories (WithVolumes), devices and
// WithContainerConfig functions are not recorded.
type snapshotRecord struct {
	Image          string            `json:"image"` // the sandbox's image
	WorkingDir     string            `json:"workdir"`
	User           string            `json:"user,omitempty"`
	Env            []string          `json:"env,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	NetworkMode    string            `json:"network,omitempty"`
	DNS            []string          `json:"dns,omitempty"`
	GPUs           int               `json:"gpus,omitempty"`
	Memory         int64             `json:"memory,omitempty"`
	NanoCPUs       int64             `json:"nano_cpus,omitempty"`
	PidsLimit      int64             `json:"pids_limit,omitempty"`
	ShmSize        int64             `json:"shm_size,omitempty"`
	Ulimits        []Ulimit          `json:"ulimits,omitempty"`
	ReadOnlyRootfs bool              `json:"read_only_rootfs,omitempty"`
	CapDrop        []string          `json:"cap_drop,omitempty"`
	Runtime        string            `json:"runtime,omitempty"`
	Secure         bool              `json:"secure,omitempty"`
	AutoRemove     bool              `json:"auto_remove"`
	ExecuteTimeout time.Duration     `json:"execute_timeout"`
	MaxOutputBytes int               `json:"max_output_bytes"`
	MaxDownload    int64             `json:"max_download"`
	NoChannel      bool              `json:"no_channel,omitempty"`
	Lifetime       time.Duration     `json:"lifetime,omitempty"`
	IdleTimeout    time.Duration     `json:"idle_timeout,omitempty"`
	Volumes        []string          `json:"volumes,omitempty"` // the volume contents recorded in the image
}

// snapshotFrom is what WithSnapshot tells New.
type snapshotFrom struct {
	id      string   // the snapshot's image ID
	base    string   // the image the first snapshot of the chain was taken on
	volumes []string // the volumes whose recorded content New restores
}

func recordOptions(o *options) snapshotRecord {
	r := snapshotRecord{
		Image: o.image, WorkingDir: o.workingDir, User: o.user, Env: o.env, Labels: o.labels,
		NetworkMode: o.networkMode, GPUs: o.gpus, Memory: o.memory, NanoCPUs: o.nanoCPUs,
		PidsLimit: o.pidsLimit, ShmSize: o.shmSize, ReadOnlyRootfs: o.readOnlyRootfs, CapDrop: o.capDrop,
		Runtime: o.runtime, Secure: o.secure, AutoRemove: o.autoRemove, ExecuteTimeout: o.executeTimeout,
		MaxOutputBytes: o.maxOutputBytes, MaxDownload: o.maxDownload, NoChannel: o.noChannel,
		Lifetime: o.lifetime, IdleTimeout: o.idleTimeout,
	}
	if o.snap.base != "" {
		r.Image = o.snap.base // the original image, through a chain of snapshots
	}
	for _, a := range o.dns {
		r.DNS = append(r.DNS, a.String())
	}
	for _, u := range o.ulimits {
		r.Ulimits = append(r.Ulimits, Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	return r
}

// apply sets o as the recorded options say.
func (r snapshotRecord) apply(o *options) error {
	o.workingDir, o.user, o.env = r.WorkingDir, r.User, slices.Clone(r.Env)
	if o.workingDir == "" {
		return errors.New("the snapshot records no working directory")
	}
	if len(r.Labels) > 0 {
		if err := WithLabels(r.Labels)(o); err != nil {
			return err
		}
	}
	o.networkMode, o.gpus, o.memory, o.nanoCPUs = r.NetworkMode, r.GPUs, r.Memory, r.NanoCPUs
	o.pidsLimit, o.shmSize, o.readOnlyRootfs, o.runtime = r.PidsLimit, r.ShmSize, r.ReadOnlyRootfs, r.Runtime
	o.capDrop = slices.Compact(slices.Clone(r.CapDrop))
	o.secure, o.autoRemove, o.executeTimeout = r.Secure, r.AutoRemove, r.ExecuteTimeout
	o.maxOutputBytes, o.maxDownload, o.noChannel = r.MaxOutputBytes, r.MaxDownload, r.NoChannel
	o.lifetime, o.idleTimeout = r.Lifetime, r.IdleTimeout
	o.dns = nil
	for _, s := range r.DNS {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("recorded DNS server %q: %v", s, err)
		}
		o.dns = append(o.dns, a)
	}
	o.ulimits = nil
	for _, u := range r.Ulimits {
		o.ulimits = append(o.ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if o.maxOutputBytes <= 0 || o.maxDownload <= 0 || o.executeTimeout < 0 {
		return errors.New("the snapshot records invalid limits")
	}
	return nil
}

// Fork makes n sandboxes from the snapshot, concurrently, as
// New(ctx, WithSnapshot(snap), opts...) does, on the engine the snapshot
// was taken on (opts may name another client). If any fails, those made
// are closed and the error says why.
func (snap *Snapshot) Fork(ctx context.Context, n int, opts ...Option) (_ []*Sandbox, err error) {
	ctx, op := snap.begin(ctx, "Snapshot.Fork")
	defer op.end(&err)
	op.int("sandbox.count", int64(n))
	if n <= 0 {
		return nil, fmt.Errorf("%w: fork count %d must be positive", ErrInvalidOption, n)
	}
	all := append(append(slices.Clone(snap.conn), WithSnapshot(snap)), opts...)
	out := make([]*Sandbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = New(ctx, all...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, sb := range out {
			if sb != nil {
				err = errors.Join(err, sb.Close())
			}
		}
		return nil, fmt.Errorf("sandbox: fork %s: %w", shortImageID(snap.ID), err)
	}
	return out, nil
}
