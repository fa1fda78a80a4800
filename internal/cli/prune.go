package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/dockersandbox/sandbox"
)

func prune(ctx context.Context, args []string) error {
	fs := newFlags("prune", "[-owner OWNER] [-label KEY=VALUE]... [-older-than DURATION] [-dead-owners] [-all] [-json]")
	filters := addFilterFlags(fs)
	all := fs.Bool("all", false, "remove every sandbox on the daemon (not with a filter)")
	asJSON := fs.Bool("json", false, "print the removed IDs as a JSON array")
	choice := engineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: prune takes no arguments", errUsage)
	}
	f, err := filters.filter()
	if err != nil {
		return err
	}
	f.All = *all
	switch {
	case f.All && filters.set():
		return fmt.Errorf("%w: -all removes every sandbox: it takes no filter", errUsage)
	case !f.All && !filters.set():
		return fmt.Errorf("%w: prune needs a filter (-owner, -label, -older-than, -dead-owners) or -all", errUsage)
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	removed, err := sandbox.Prune(ctx, f, eng...)
	if *asJSON {
		if removed == nil {
			removed = []string{}
		}
		if jerr := printJSON(os.Stdout, removed); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		for _, id := range removed {
			fmt.Println(id)
		}
	}
	return err
}
