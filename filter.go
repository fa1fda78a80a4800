package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/client"
)

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
