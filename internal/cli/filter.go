package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
)

// filterFlags are the selection flags ls and prune share; they combine
// with AND, as sandbox.Filter does.
type filterFlags struct {
	owner      string
	labels     multiFlag
	olderThan  time.Duration
	deadOwners bool
}

func addFilterFlags(fs *flag.FlagSet) *filterFlags {
	f := &filterFlags{}
	fs.StringVar(&f.owner, "owner", "", "only sandboxes of this `owner` (\"cli\" for those of sandbox create, or \"host:pid\")")
	fs.Var(&f.labels, "label", "only sandboxes with the label `key=value` (key alone: any value; repeatable)")
	fs.DurationVar(&f.olderThan, "older-than", 0, "only sandboxes created longer ago than this `duration`")
	fs.BoolVar(&f.deadOwners, "dead-owners", false, "only sandboxes whose creating process on this host is gone")
	return f
}

// filter returns the sandbox.Filter the flags say.
func (f *filterFlags) filter() (sandbox.Filter, error) {
	out := sandbox.Filter{Owner: f.owner, OlderThan: f.olderThan, DeadOwners: f.deadOwners}
	if f.olderThan < 0 {
		return out, fmt.Errorf("%w: -older-than %v is negative", errUsage, f.olderThan)
	}
	for _, l := range f.labels {
		k, v, _ := strings.Cut(l, "=")
		if k == "" {
			return out, fmt.Errorf("%w: -label %q: want key=value or key", errUsage, l)
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[k] = v
	}
	return out, nil
}

// set reports whether a filter flag was given.
func (f *filterFlags) set() bool {
	return f.owner != "" || len(f.labels) > 0 || f.olderThan != 0 || f.deadOwners
}
