package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A PruneOption selects what Prune removes, or how it connects.
type PruneOption func(*pruneConfig) error

type pruneConfig struct {
	olderThan  time.Duration
	deadOwners bool
	all        bool
	client     *client.Client
	clientOpts []client.Opt
}

// PruneOlderThan selects sandboxes created more than d ago.
func PruneOlderThan(d time.Duration) PruneOption {
	return func(c *pruneConfig) error {
		if d <= 0 {
			return fmt.Errorf("age %v must be positive", d)
		}
		c.olderThan = d
		return nil
	}
}

// PruneDeadOwners selects sandboxes whose creating process, on this host,
// is gone (it crashed or exited without Close), and sandboxes created and
// never started more than abandonedAfter ago, whatever their owner (a
// process on another host that died inside New, say).
func PruneDeadOwners() PruneOption {
	return func(c *pruneConfig) error {
		c.deadOwners = true
		return nil
	}
}

// PruneAll selects every sandbox on the daemon.
func PruneAll() PruneOption {
	return func(c *pruneConfig) error {
		c.all = true
		return nil
	}
}

// PruneClient makes Prune use an existing Docker client.
func PruneClient(cli *client.Client) PruneOption {
	return func(c *pruneConfig) error {
		if cli == nil {
			return fmt.Errorf("nil client")
		}
		c.client = cli
		return nil
	}
}

// PruneClientOptions configures the client Prune creates (default: from
// the environment, like New).
func PruneClientOptions(opts ...client.Opt) PruneOption {
	return func(c *pruneConfig) error {
		c.clientOpts = append(c.clientOpts, opts...)
		return nil
	}
}

// Info describes a sandbox found by List.
type Info struct {
	ID      string // short
	Name    string
	Image   string
	State   string // "running", "exited", ...
	Created time.Time
	Owner   string
}

// List returns the library's containers (found by their labels) that the
// options select, or all of them when no selection option is given.
func List(ctx context.Context, opts ...PruneOption) ([]Info, error) {
	cfg, err := pruneSettings(opts)
	if err != nil {
		return nil, err
	}
	if cfg.olderThan == 0 && !cfg.deadOwners {
		cfg.all = true
	}
	var out []Info
	err = cfg.each(ctx, func(cli dockerAPI, c container.Summary) error {
		created, _ := time.Parse(time.RFC3339, c.Labels[LabelCreated])
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, Info{ID: c.ID[:12], Name: name, Image: c.Image, State: string(c.State), Created: created, Owner: c.Labels[LabelOwner]})
		return nil
	})
	return out, err
}

func pruneSettings(opts []PruneOption) (*pruneConfig, error) {
	var cfg pruneConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	return &cfg, nil
}

// each calls fn for every sandbox container the config selects.
func (cfg *pruneConfig) each(ctx context.Context, fn func(dockerAPI, container.Summary) error) error {
	cli, own, err := connect(ctx, &options{client: cfg.client, clientOpts: cfg.clientOpts})
	if err != nil {
		return err
	}
	if own {
		defer cli.Close()
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", LabelSandbox+"=true"),
	})
	if err != nil {
		return fmt.Errorf("sandbox: list containers: %w", daemonErr(err))
	}
	host, _ := os.Hostname()
	var errs []error
	for _, c := range list.Items {
		if cfg.selects(c, host, time.Now()) {
			errs = append(errs, fn(cli, c))
		}
	}
	return errors.Join(errs...)
}

// Prune force-removes the library's containers (found by their labels)
// that the options select, with their anonymous volumes, and returns their
// short IDs. Selections add up; at least one is required.
func Prune(ctx context.Context, opts ...PruneOption) ([]string, error) {
	cfg, err := pruneSettings(opts)
	if err != nil {
		return nil, err
	}
	if cfg.olderThan == 0 && !cfg.deadOwners && !cfg.all {
		return nil, fmt.Errorf("%w: Prune needs PruneOlderThan, PruneDeadOwners or PruneAll", ErrInvalidOption)
	}
	var removed []string
	err = cfg.each(ctx, func(cli dockerAPI, c container.Summary) error {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isNotFound(err) && !removing(err) {
			return fmt.Errorf("remove %s: %w", c.ID[:12], daemonErr(err))
		}
		removed = append(removed, c.ID[:12])
		return nil
	})
	return removed, err
}

// selects reports whether a sandbox is to be pruned.
func (c *pruneConfig) selects(ctr container.Summary, host string, now time.Time) bool {
	if c.all {
		return true
	}
	if c.olderThan > 0 {
		created, err := time.Parse(time.RFC3339, ctr.Labels[LabelCreated])
		if err == nil && now.Sub(created) > c.olderThan {
			return true
		}
	}
	return c.deadOwners && (deadOwner(ctr.Labels, host) || abandoned(ctr, host, now))
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
func abandoned(ctr container.Summary, host string, now time.Time) bool {
	if ctr.State != container.StateCreated {
		return false
	}
	if deadOwner(ctr.Labels, host) {
		return true
	}
	created, err := time.Parse(time.RFC3339, ctr.Labels[LabelCreated])
	return err == nil && now.Sub(created) > abandonedAfter
}

// sweepTimeout bounds the sweep New makes before it creates a container.
const sweepTimeout = 5 * time.Second

// sweepAbandoned removes the library's abandoned containers (see
// abandoned): the helper, which enforces a lifetime and an idle timeout,
// never ran in them, so nothing else would. New calls it, so that a
// process that died inside New (or inside a Pool's refill) leaves nothing
// behind once the next sandbox is made on this daemon. It is best effort:
// failures are ignored, New goes on.
func sweepAbandoned(ctx context.Context, cli dockerAPI) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepTimeout)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", LabelSandbox+"=true").Add("status", string(container.StateCreated)),
	})
	if err != nil {
		return
	}
	host, _ := os.Hostname()
	now := time.Now()
	for _, c := range list.Items {
		if abandoned(c, host, now) {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
}
