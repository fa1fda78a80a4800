package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/engine"
)

// Info describes a sandbox found by List.
type Info struct {
	ID      string            `json:"id"` // short
	Name    string            `json:"name"`
	Image   string            `json:"image"`
	State   string            `json:"state"`   // "running", "exited", ...
	Created time.Time         `json:"created"` // from LabelCreated; zero if it is unreadable
	Owner   string            `json:"owner"`
	Labels  map[string]string `json:"labels"` // the container's labels, the library's included
}

// List returns the library's containers (found by their labels) that f
// selects, in the daemon's order. Only the options that choose the engine
// apply (WithEngine, WithClient, WithClientOptions; default: Docker from
// the environment, as for New); the others are ignored.
func List(ctx context.Context, f Filter, opts ...Option) ([]Info, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	var out []Info
	err := each(ctx, f, opts, func(_ engine.Engine, c engine.Info) error {
		created, _ := createdAt(c.Labels) // zero when unreadable
		out = append(out, Info{ID: shortID(c.ID), Name: c.Name, Image: c.Image, State: string(c.State),
			Created: created, Owner: c.Labels[LabelOwner], Labels: c.Labels})
		return nil
	})
	return out, err
}

// Prune force-removes the library's containers (found by their labels)
// that f selects, with their anonymous volumes, and returns their short
// IDs. The zero Filter is refused (ErrInvalidOption): set a criterion, or
// All to remove every sandbox on the daemon. Only the options that choose
// the Docker client apply, as for List. Removing a sandbox another process
// uses makes its calls fail with ErrGone.
func Prune(ctx context.Context, f Filter, opts ...Option) ([]string, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if !f.All && !f.narrows() {
		return nil, fmt.Errorf("%w: Prune needs a Filter criterion (Owner, Labels, OlderThan, DeadOwners), or All", ErrInvalidOption)
	}
	var removed []string
	err := each(ctx, f, opts, func(eng engine.Engine, c engine.Info) error {
		rctx, cancel := context.WithTimeout(ctx, closeTimeout) // one being removed already is waited for
		defer cancel()
		if err := eng.Remove(rctx, c.ID); err != nil {
			return fmt.Errorf("remove %s: %w", shortID(c.ID), daemonErr(err))
		}
		removePortsDir(c.Labels[labelPortsDir])
		removed = append(removed, shortID(c.ID))
		return nil
	})
	return removed, err
}

// each calls fn for every sandbox container f selects.
func each(ctx context.Context, f Filter, opts []Option, fn func(engine.Engine, engine.Info) error) error {
	o, err := newOptions(opts)
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
	list, err := eng.List(ctx, f.engineLabels())
	if err != nil {
		return fmt.Errorf("sandbox: list containers: %w", daemonErr(err))
	}
	host, _ := os.Hostname()
	now := time.Now()
	var errs []error
	for _, c := range list {
		if f.matches(c, host, now) {
			errs = append(errs, fn(eng, c))
		}
	}
	return errors.Join(errs...)
}

// deadOwner reports whether the sandbox's owner label names a process of
// this host that no longer exists.
func deadOwner(labels map[string]string, host string) bool {
	h, pidText, ok := strings.Cut(labels[LabelOwner], ":")
	pid, err := strconv.Atoi(pidText)
	return ok && err == nil && h == host && !processAlive(pid)
}

// abandonedAfter is how long after its creation label a container still
// "created" (never started) is taken as abandoned whatever its owner:
// New starts its container or removes it within ContainerCreate's bound
// (closeTimeout) plus startBound, so one still created later belongs to a
// process that died inside New. The slack covers clocks of other hosts.
const abandonedAfter = closeTimeout + startBound + 2*time.Minute + 30*time.Second

// abandoned reports whether ctr was created and never started by a New
// that will not start it: its owner, on this host, died, or it is older
// than abandonedAfter. Such a container never reached its owner (New
// returns started sandboxes only), so no one can use it.
func abandoned(ctr engine.Info, host string, now time.Time) bool {
	if ctr.State != engine.StateCreated {
		return false
	}
	if deadOwner(ctr.Labels, host) {
		return true
	}
	created, ok := createdAt(ctr.Labels)
	return ok && now.Sub(created) > abandonedAfter
}

// sweepTimeout bounds the sweep New makes before it creates a container.
const sweepTimeout = 5 * time.Second

// sweepAbandoned removes the library's abandoned containers (see
// abandoned): the helper, which enforces a lifetime and an idle timeout,
// never ran in them, so nothing else would. New calls it, so that a
// process that died inside New (or inside a Pool's refill) leaves nothing
// behind once the next sandbox is made on this daemon. It is best effort:
// failures are ignored, New goes on. Then it removes the port socket
// directories that dead programs left (sweepPortDirs).
func sweepAbandoned(ctx context.Context, eng engine.Engine) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepTimeout)
	defer cancel()
	list, err := eng.List(ctx, map[string]string{LabelSandbox: "true"})
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	now := time.Now()
	kept := list[:0]
	for _, c := range list {
		if abandoned(c, host, now) && eng.Remove(ctx, c.ID) == nil {
			continue
		}
		kept = append(kept, c)
	}
	sweepPortDirs(kept)
}

// shortID returns the first 12 characters of a Docker container ID; other
// engines' IDs (a pod's name) as they are.
func shortID(id string) string {
	if len(id) == 64 && strings.Trim(id, "0123456789abcdef") == "" {
		return id[:12]
	}
	return id
}
