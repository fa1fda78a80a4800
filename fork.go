package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
)

// snapshotRecord is what a snapshot records of its sandbox's options
// (LabelSnapshotOptions), for FromSnapshot. The Docker client, the
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

// snapshotFrom is what FromSnapshot tells New.
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

// FromSnapshot makes New create the sandbox from the snapshot: its image,
// and the options the snapshotted sandbox was made with (working
// directory, user, environment, labels, limits, network, secure profile,
// lifetimes...). Options after it override those; put it first. The
// secure profile's in-memory directories start with the recorded content.
// The snapshot must be on the engine New connects to.
func FromSnapshot(snap *Snapshot) Option {
	return func(o *options) error {
		if snap == nil || snap.ID == "" {
			return errors.New("nil snapshot")
		}
		var r snapshotRecord
		if err := json.Unmarshal([]byte(snap.Labels[LabelSnapshotOptions]), &r); err != nil {
			return fmt.Errorf("%w %s: its options label is unreadable: %v", errNoSnapshot, shortImageID(snap.ID), err)
		}
		if err := r.apply(o); err != nil {
			return fmt.Errorf("snapshot %s: %v", shortImageID(snap.ID), err)
		}
		o.image, o.pullPolicy = snap.ID, PullNever
		o.snap = snapshotFrom{id: snap.ID, base: r.Image, volumes: r.Volumes}
		return nil
	}
}

// Fork makes n sandboxes from the snapshot, concurrently, as
// New(ctx, FromSnapshot(snap), opts...) does, on the engine the snapshot
// was taken on (opts may name another client). If any fails, those made
// are closed and the error says why.
func (snap *Snapshot) Fork(ctx context.Context, n int, opts ...Option) ([]*DockerSandbox, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: fork count %d must be positive", ErrInvalidOption, n)
	}
	all := append(append(slices.Clone(snap.conn), FromSnapshot(snap)), opts...)
	out := make([]*DockerSandbox, n)
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
