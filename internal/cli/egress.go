package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/egressflag"
)

// egressCmd serves the egress of a sandbox made with create -egress-allow
// (or -egress-policy) until interrupted: "sandbox egress [flags] ID". The
// egress lives with the process that serves it; without one the sandbox
// has no way out at all.
func egressCmd(ctx context.Context, args []string) error {
	fs := newFlags("egress", "[flags] ID")
	policy := egressflag.AddFlags(fs)
	choice := engineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: egress needs the sandbox's ID", errUsage)
	}
	if !policy.Set() {
		return fmt.Errorf("%w: egress needs -egress-allow or -egress-policy", errUsage)
	}
	p, err := policy.Policy(os.Getenv, logEgress(os.Stderr))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	sb, err := attach(ctx, eng, fs.Arg(0), sandbox.WithAutoRemove(false), sandbox.WithEgress(*p))
	if err != nil {
		return err
	}
	defer sb.Detach()
	fmt.Fprintf(os.Stderr, "serving the egress of sandbox %s; Ctrl-C to stop (the sandbox then has no way out)\n", sb.ID())
	<-ctx.Done()
	return nil
}

// logEgress prints each egress decision as a line on w.
func logEgress(w io.Writer) func(sandbox.EgressEvent) {
	var mu sync.Mutex
	return func(ev sandbox.EgressEvent) {
		verdict := "allowed"
		if !ev.Allowed {
			verdict = "denied"
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "egress %s %s %s:%d", verdict, ev.Method, ev.Host, ev.Port)
		if ev.Rule != "" {
			fmt.Fprintf(w, " rule=%q", ev.Rule)
		}
		if ev.Reason != "" {
			fmt.Fprintf(w, " reason=%q", ev.Reason)
		}
		fmt.Fprintf(w, " sent=%d received=%d %s\n", ev.Sent, ev.Received, ev.Duration.Round(1e6))
	}
}
