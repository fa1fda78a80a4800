package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
)

// ListSnapshots returns the snapshots on the engine that f selects, as
// List does for sandboxes: by owner, labels (the sandbox's labels are
// recorded on its snapshots too), age, or dead owners (snapshots whose
// owning process, on this host, is gone — among them what a process that
// died inside Snapshot left). Only the options that choose the engine
// apply, as for List.
func ListSnapshots(ctx context.Context, f Filter, opts ...Option) ([]*Snapshot, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	var out []*Snapshot
	err := eachSnapshot(ctx, f, opts, "ListSnapshots", func(_ snapshotAPI, img image.Summary) error {
		out = append(out, snapshotOf(img, connOnly(opts)))
		return nil
	})
	return out, err
}

// PruneSnapshots removes the snapshots that f selects and returns their
// IDs. As for Prune, the zero Filter is refused (ErrInvalidOption): set a
// criterion, or All. Sandboxes made from a removed snapshot keep running.
func PruneSnapshots(ctx context.Context, f Filter, opts ...Option) ([]string, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if !f.All && !f.narrows() {
		return nil, fmt.Errorf("%w: PruneSnapshots needs a Filter criterion (Owner, Labels, OlderThan, DeadOwners), or All", ErrInvalidOption)
	}
	var removed []string
	err := eachSnapshot(ctx, f, opts, "PruneSnapshots", func(cli snapshotAPI, img image.Summary) error {
		if err := removeSnapshot(ctx, cli, img.ID); err != nil {
			return err
		}
		removed = append(removed, imageID(img.ID))
		return nil
	})
	return removed, err
}

// eachSnapshot calls fn for every snapshot image f selects, newest first.
// Images a failed or interrupted Snapshot left (untagged) are included.
func eachSnapshot(ctx context.Context, f Filter, opts []Option, name string, fn func(snapshotAPI, image.Summary) error) error {
	return withSnapshotClient(ctx, opts, name, func(cli snapshotAPI) error {
		list, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f.labelFilters(LabelSnapshot)})
		for try := 0; err != nil && try < 5 && listRaced(err) && ctx.Err() == nil; try++ {
			time.Sleep(50 * time.Millisecond)
			list, err = cli.ImageList(ctx, client.ImageListOptions{Filters: f.labelFilters(LabelSnapshot)})
		}
		if err != nil {
			return fmt.Errorf("sandbox: list snapshots: %w", daemonErr(err))
		}
		host, _ := os.Hostname()
		now := time.Now()
		var errs []error
		for _, img := range list.Items {
			if img.Labels[LabelSnapshot] != "true" || !f.matchLabels(img.Labels, now) ||
				f.DeadOwners && !deadOwner(img.Labels, host) {
				continue
			}
			errs = append(errs, fn(cli, img))
		}
		return errors.Join(errs...)
	})
}

// listRaced reports whether an image list failed because an image went
// while it was listed: Podman 4.3 fails the whole list ("retrieving size
// of image ...: image not known") when another process removes one
// meanwhile. The list is asked again.
func listRaced(err error) bool {
	return strings.Contains(err.Error(), "retrieving size of image") && strings.Contains(err.Error(), "image not known")
}

// LookupSnapshot returns the snapshot with this image ID or reference
// (its Ref, say), for a process that did not take it.
// ErrImageNotFound if there is none; an image that is not a snapshot is
// refused.
func LookupSnapshot(ctx context.Context, ref string, opts ...Option) (*Snapshot, error) {
	var snap *Snapshot
	err := withSnapshotClient(ctx, opts, "LookupSnapshot", func(cli snapshotAPI) error {
		res, err := cli.ImageInspect(ctx, ref)
		if docker.IsNotFound(err) {
			return fmt.Errorf("%w: snapshot %s", ErrImageNotFound, ref)
		}
		if err != nil {
			return fmt.Errorf("sandbox: inspect snapshot %s: %w", ref, daemonErr(err))
		}
		var labels map[string]string
		if res.Config != nil {
			labels = res.Config.Labels
		}
		if labels[LabelSnapshot] != "true" {
			return fmt.Errorf("%w: image %s", errNoSnapshot, ref)
		}
		snap = snapshotOf(image.Summary{ID: res.ID, RepoTags: res.RepoTags, Labels: labels}, connOnly(opts))
		return nil
	})
	return snap, err
}

func snapshotOf(img image.Summary, conn []Option) *Snapshot {
	created, _ := createdAt(img.Labels)
	ref := ""
	for _, t := range img.RepoTags {
		// Podman names local images localhost/<name>.
		t = strings.TrimPrefix(strings.TrimPrefix(t, "localhost/"), "docker.io/library/")
		if strings.HasPrefix(t, snapshotRepo+":") {
			ref = t
		}
	}
	return &Snapshot{ID: imageID(img.ID), Ref: ref, Created: created, Owner: img.Labels[LabelOwner], Labels: img.Labels, conn: conn}
}

// connOnly keeps, of opts, what reaches the engine.
func connOnly(opts []Option) []Option {
	o, err := newOptions(opts, callAny, "")
	if err != nil {
		return nil
	}
	switch {
	case o.engine != nil:
		return []Option{WithEngine(o.engine)}
	case o.client != nil:
		return []Option{WithClient(o.client)}
	case len(o.clientOpts) > 0:
		return []Option{WithClientOptions(o.clientOpts...)}
	}
	return nil
}

// imageID returns id as "sha256:<hex>" (Podman answers a commit with the
// bare hex).
func imageID(id string) string {
	if id != "" && !strings.Contains(id, ":") {
		return "sha256:" + id
	}
	return id
}
