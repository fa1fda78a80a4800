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
// is gone (it crashed or exited without Close).
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
		return fmt.Errorf("sandbox: list containers: %w", err)
	}
	host, _ := os.Hostname()
	var errs []error
	for _, c := range list.Items {
		if cfg.selects(c.Labels, host) {
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
			return fmt.Errorf("remove %s: %w", c.ID[:12], err)
		}
		removed = append(removed, c.ID[:12])
		return nil
	})
	return removed, err
}

// selects reports whether a sandbox with these labels is to be pruned.
func (c *pruneConfig) selects(labels map[string]string, host string) bool {
	if c.all {
		return true
	}
	if c.olderThan > 0 {
		created, err := time.Parse(time.RFC3339, labels[LabelCreated])
		if err == nil && time.Since(created) > c.olderThan {
			return true
		}
	}
	if c.deadOwners {
		h, pidText, ok := strings.Cut(labels[LabelOwner], ":")
		pid, err := strconv.Atoi(pidText)
		if ok && err == nil && h == host && !processAlive(pid) {
			return true
		}
	}
	return false
}
