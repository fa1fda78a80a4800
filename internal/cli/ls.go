package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dockersandbox/sandbox"
)

// lsEntry is one sandbox of ls -json.
type lsEntry struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Image   string            `json:"image"`
	State   string            `json:"state"`
	Created string            `json:"created"` // RFC 3339, UTC; "" if unknown
	Owner   string            `json:"owner"`
	Labels  map[string]string `json:"labels"`
}

func ls(ctx context.Context, args []string) error {
	fs := newFlags("ls", "[-owner OWNER] [-label KEY=VALUE]... [-older-than DURATION] [-dead-owners] [-json]")
	filters := addFilterFlags(fs)
	choice := engineFlags(fs)
	asJSON := fs.Bool("json", false, `print a JSON array of {"id", "name", "image", "state", "created", "owner", "labels"}`)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: ls takes no arguments", errUsage)
	}
	f, err := filters.filter()
	if err != nil {
		return err
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	list, err := sandbox.List(ctx, f, eng...)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]lsEntry, 0, len(list))
		for _, s := range list {
			e := lsEntry{ID: s.ID, Name: s.Name, Image: s.Image, State: s.State, Owner: s.Owner, Labels: s.Labels}
			if !s.Created.IsZero() {
				e.Created = s.Created.UTC().Format(time.RFC3339)
			}
			if e.Labels == nil {
				e.Labels = map[string]string{}
			}
			out = append(out, e)
		}
		return printJSON(os.Stdout, out)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tIMAGE\tSTATE\tCREATED\tOWNER")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\t%s\n", s.ID, s.Name, s.Image, s.State, time.Since(s.Created).Round(time.Second), s.Owner)
	}
	return tw.Flush()
}

func rm(ctx context.Context, args []string) error {
	fs := newFlags("rm", "[-json] ID...")
	asJSON := fs.Bool("json", false, "print the removed IDs as a JSON array")
	choice := engineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: rm needs at least one ID", errUsage)
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	removed := []string{}
	failed := false
	for _, id := range fs.Args() {
		sb, err := attach(ctx, eng, id)
		if err == nil {
			err = sb.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandbox rm: %s\n", strings.TrimPrefix(err.Error(), "sandbox: "))
			failed = true
			continue
		}
		removed = append(removed, id)
		if !*asJSON {
			fmt.Println(id)
		}
	}
	if *asJSON {
		if err := printJSON(os.Stdout, removed); err != nil {
			return err
		}
	}
	if failed {
		return exitError{1} // each failure is printed above
	}
	return nil
}

// attach is sandbox.Attach on the engine eng's options choose, saying "no
// such sandbox" when there is none.
func attach(ctx context.Context, eng []sandbox.Option, id string, opts ...sandbox.Option) (*sandbox.Sandbox, error) {
	sb, err := sandbox.Attach(ctx, id, append(slices.Clip(eng), opts...)...)
	switch {
	case err == nil:
		return sb, nil
	case errors.Is(err, sandbox.ErrInvalidOption):
		return nil, fmt.Errorf("no such sandbox: %s (a container of that name exists, but the library did not make it)", id)
	case errors.Is(err, sandbox.ErrGone):
		if state, found := lookupState(ctx, eng, id); found {
			return nil, fmt.Errorf("sandbox %s is not running (state %s)", id, state)
		}
		return nil, fmt.Errorf("no such sandbox: %s", id)
	}
	return nil, err
}

// lookupState finds the sandbox id (a short or full ID, an ID prefix, or a
// name) and returns its state.
func lookupState(ctx context.Context, eng []sandbox.Option, id string) (string, bool) {
	list, err := sandbox.List(ctx, sandbox.Filter{}, eng...)
	if err != nil {
		return "", false
	}
	for _, s := range list {
		if s.Name == id || strings.HasPrefix(s.ID, id) || len(id) > len(s.ID) && strings.HasPrefix(id, s.ID) {
			return s.State, true
		}
	}
	return "", false
}
