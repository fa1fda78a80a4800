package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/client"
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
// apply (WithEngine; default: Docker from the environment, as for New);
// another is ErrInvalidOption.
func List(ctx context.Context, f Filter, opts ...Option) ([]Info, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	var out []Info
	err := each(ctx, f, opts, "List", func(_ engine.Engine, c engine.Info) error {
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
// the engine apply, as for List. Removing a sandbox another process
// uses makes its calls fail with ErrGone.
func Prune(ctx context.Context, f Filter, opts ...Option) ([]string, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if !f.All && !f.narrows() {
		return nil, fmt.Errorf("%w: Prune needs a Filter criterion (Owner, Labels, OlderThan, DeadOwners), or All", ErrInvalidOption)
	}
	var removed []string
	err := each(ctx, f, opts, "Prune", func(eng engine.Engine, c engine.Info) error {
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
func each(ctx context.Context, f Filter, opts []Option, name string, fn func(engine.Engine, engine.Info) error) error {
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

// processAlive reports whether a process with this pid exists on this host.
// Where signal 0 cannot tell (not a Unix), it never calls an owner dead.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return true // not a Unix: FindProcess may fail for a live process
	}
	defer p.Release()
	err = p.Signal(syscall.Signal(0))
	return !errors.Is(err, os.ErrProcessDone) && !errors.Is(err, syscall.ESRCH)
}

// abandonedAfter is how long after its creation label a container still
// "created" (never started) is taken as abandoned whatever its owner:
// New starts its container or removes it within ContainerCreate's bound
// (closeTimeout) plus startBound, so one still created later belongs to a
// process that died inside New. The slack covers clocks of other hosts.
const abandonedAfter = closeTimeout + startBound + 2*time.Minute + 30*time.Second

func init() { testhook.AbandonedAfter = abandonedAfter }

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

// A Filter selects the library's sandboxes for List and Prune. Every
// criterion that is set must hold (they combine with AND); the zero Filter
// sets none and selects every sandbox. Prune refuses it unless All says
// so, so that a forgotten criterion cannot remove every sandbox of a
// daemon shared with other programs.
//
// To scope a program's sandboxes on a shared daemon, give them a label
// (WithLabels) and filter on it: a label holds across restarts of the
// program and keeps DeadOwners working, which a fixed WithOwner name
// would not.
type Filter struct {
	// Owner selects sandboxes whose LabelOwner is exactly this:
	// "<hostname>:<pid>" of the creating process, or what WithOwner set.
	Owner string
	// Labels selects sandboxes that carry every one of these labels with
	// this value; an empty value selects the label whatever its value.
	Labels map[string]string
	// OlderThan selects sandboxes created more than this long ago (by
	// LabelCreated); 0 means any age.
	OlderThan time.Duration
	// DeadOwners selects orphans: sandboxes whose creating process, on
	// this host, is gone (it crashed or exited without Close), and
	// sandboxes created and never started long ago (a process that died
	// inside New, on any host). Owners not of the "<hostname>:<pid>" form
	// (WithOwner) are never dead.
	DeadOwners bool
	// All confirms that a Prune may remove every sandbox on the daemon. It
	// cannot be combined with another criterion.
	All bool
}

// validate checks f's values.
func (f Filter) validate() error {
	if f.OlderThan < 0 {
		return fmt.Errorf("%w: Filter.OlderThan %v is negative", ErrInvalidOption, f.OlderThan)
	}
	for k := range f.Labels {
		if k == "" {
			return fmt.Errorf("%w: Filter.Labels has an empty key", ErrInvalidOption)
		}
	}
	if f.All && f.narrows() {
		return fmt.Errorf("%w: Filter.All cannot be combined with another criterion", ErrInvalidOption)
	}
	return nil
}

// narrows reports whether f has a criterion.
func (f Filter) narrows() bool {
	return f.Owner != "" || len(f.Labels) > 0 || f.OlderThan > 0 || f.DeadOwners
}

// String describes f, e.g. `owner=cli label:app=x older-than=1h0m0s dead-owners`.
func (f Filter) String() string {
	var parts []string
	if f.Owner != "" {
		parts = append(parts, "owner="+f.Owner)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
		parts = append(parts, "label:"+k+"="+f.Labels[k])
	}
	if f.OlderThan > 0 {
		parts = append(parts, "older-than="+f.OlderThan.String())
	}
	if f.DeadOwners {
		parts = append(parts, "dead-owners")
	}
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

// engineLabels returns the criteria the engine can apply itself: the
// sandbox label, the owner and the labels. (matches checks them again.)
func (f Filter) engineLabels() map[string]string {
	l := maps.Clone(f.Labels)
	if l == nil {
		l = map[string]string{}
	}
	if f.Owner != "" {
		l[LabelOwner] = f.Owner
	}
	l[LabelSandbox] = "true"
	return l
}

// labelFilters returns the daemon filters of f for objects marked with
// the label kind ("true").
func (f Filter) labelFilters(kind string) client.Filters {
	flt := make(client.Filters).Add("label", kind+"=true")
	if f.Owner != "" {
		flt.Add("label", LabelOwner+"="+f.Owner)
	}
	for k, v := range f.Labels {
		if v == "" {
			flt.Add("label", k)
		} else {
			flt.Add("label", k+"="+v)
		}
	}
	return flt
}

// matches reports whether f selects ctr; host is this host's name.
func (f Filter) matches(ctr engine.Info, host string, now time.Time) bool {
	if ctr.Labels[LabelSandbox] != "true" || !f.matchLabels(ctr.Labels, now) {
		return false
	}
	if f.DeadOwners && !deadOwner(ctr.Labels, host) && !abandoned(ctr, host, now) {
		return false
	}
	return true
}

// matchLabels checks the criteria that labels decide: Owner, Labels and
// OlderThan (for sandboxes and snapshots alike).
func (f Filter) matchLabels(labels map[string]string, now time.Time) bool {
	if f.Owner != "" && labels[LabelOwner] != f.Owner {
		return false
	}
	for k, v := range f.Labels {
		got, ok := labels[k]
		if !ok || v != "" && got != v {
			return false
		}
	}
	if f.OlderThan > 0 {
		created, ok := createdAt(labels)
		if !ok || now.Sub(created) <= f.OlderThan {
			return false
		}
	}
	return true
}

// Labels on every container the library creates, so that leaked ones can
// be found (docker ps --filter label=com.dockersandbox.sandbox).
const (
	labelPrefix = "com.dockersandbox."
	// LabelSandbox marks a container as a sandbox; its value is "true".
	LabelSandbox = labelPrefix + "sandbox"
	// LabelCreated holds the creation time, RFC 3339 in UTC.
	LabelCreated = labelPrefix + "created"
	// LabelOwner holds "<hostname>:<pid>" of the process that created it.
	LabelOwner = labelPrefix + "owner"
	// LabelWorkingDir holds the sandbox's working directory.
	LabelWorkingDir = labelPrefix + "workdir"
	// LabelEgress, on a sandbox made with WithEgress, holds where its
	// proxy listens (EgressProxyAddr).
	LabelEgress = labelPrefix + "egress"
)

func ownerLabel() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// createdAt reads a container's creation label; ok is false when it is
// missing or unreadable.
func createdAt(labels map[string]string) (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339, labels[LabelCreated])
	return t, err == nil
}

func (o *options) containerLabels(now time.Time) map[string]string {
	l := map[string]string{}
	for k, v := range o.labels {
		l[k] = v
	}
	l[LabelSandbox] = "true"
	l[LabelCreated] = now.UTC().Format(time.RFC3339)
	l[LabelOwner] = ownerLabel()
	if o.owner != "" {
		l[LabelOwner] = o.owner
	}
	return l
}
