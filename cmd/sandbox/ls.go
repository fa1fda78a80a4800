package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/dockersandbox/sandbox"
)

func ls(ctx context.Context, args []string) error {
	fs := newFlags("ls", "[-json]")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	list, err := sandbox.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []sandbox.Info{}
		}
		return printJSON(os.Stdout, list)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tIMAGE\tSTATE\tCREATED\tOWNER")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\t%s\n", s.ID, s.Name, s.Image, s.State, time.Since(s.Created).Round(time.Second), s.Owner)
	}
	return tw.Flush()
}

func rm(ctx context.Context, args []string) error {
	fs := newFlags("rm", "ID...")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: rm needs at least one ID", errUsage)
	}
	var failed error
	for _, id := range fs.Args() {
		sb, err := sandbox.Attach(ctx, id)
		if err == nil {
			err = sb.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox rm %s: %v\n", id, err)
			failed = err
			continue
		}
		fmt.Println(id)
	}
	return failed
}
