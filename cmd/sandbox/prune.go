package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dockersandbox/sandbox"
)

func prune(ctx context.Context, args []string) error {
	fs := newFlags("prune", "[-older-than DURATION] [-dead-owners] [-all] [-json]")
	olderThan := fs.Duration("older-than", 0, "remove sandboxes created longer ago than this")
	deadOwners := fs.Bool("dead-owners", false, "remove sandboxes whose creating process on this host is gone")
	all := fs.Bool("all", false, "remove every sandbox")
	asJSON := fs.Bool("json", false, "print the removed IDs as a JSON array")
	if err := parse(fs, args); err != nil {
		return err
	}
	var opts []sandbox.PruneOption
	if *olderThan > 0 {
		opts = append(opts, sandbox.PruneOlderThan(*olderThan))
	}
	if *deadOwners {
		opts = append(opts, sandbox.PruneDeadOwners())
	}
	if *all {
		opts = append(opts, sandbox.PruneAll())
	}
	if len(opts) == 0 {
		return fmt.Errorf("%w: prune needs -older-than, -dead-owners or -all", errUsage)
	}
	removed, err := sandbox.Prune(ctx, opts...)
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
