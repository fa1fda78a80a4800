// Command sandbox manages the library's sandbox containers.
//
//	sandbox prune [-older-than 1h] [-dead-owners] [-all] [-json]
//
// prune removes the sandboxes selected by the flags (at least one is
// required) and prints their IDs. Exit status: 0 on success, 1 on failure,
// 2 on bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox"
)

const usage = `usage: sandbox prune [-older-than DURATION] [-dead-owners] [-all] [-json]`

func main() {
	if len(os.Args) < 2 || os.Args[1] != "prune" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(prune(ctx, os.Args[2:]))
}

func prune(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	olderThan := fs.Duration("older-than", 0, "remove sandboxes created longer ago than this")
	deadOwners := fs.Bool("dead-owners", false, "remove sandboxes whose creating process on this host is gone")
	all := fs.Bool("all", false, "remove every sandbox")
	asJSON := fs.Bool("json", false, "print the removed IDs as a JSON array")
	if err := fs.Parse(args); err != nil {
		return 2
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	removed, err := sandbox.Prune(ctx, opts...)
	if *asJSON {
		if removed == nil {
			removed = []string{}
		}
		_ = json.NewEncoder(os.Stdout).Encode(removed)
	} else {
		for _, id := range removed {
			fmt.Println(id)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox prune:", err)
		if errors.Is(err, sandbox.ErrInvalidOption) {
			fmt.Fprintln(os.Stderr, usage)
			return 2
		}
		return 1
	}
	return 0
}
