// Command testimages builds the local Docker images used by the integration
// tests (see package internal/testenv), if they are missing: the busybox
// and Debian images, and the tools image of the egress tests. CI runs it once
// before `go test` so that test packages don't wait on each other for it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
)

func main() {
	busyboxOnly := flag.Bool("busybox-only", false, "build only the busybox image (fast; what the quickstart needs)")
	tools := flag.Bool("tools", true, "also build the tools image (curl, git, pip, npm) of the egress tests, which run on Docker only")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cli, err := testenv.NewClient(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cli.Close()

	start := time.Now()
	ensure, refs := testenv.EnsureImages, []string{testenv.BusyboxImage, testenv.DebianImage}
	if *busyboxOnly {
		ensure, refs = testenv.EnsureBusybox, refs[:1]
	}
	if err := ensure(ctx, cli); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *tools && !*busyboxOnly {
		if err := testenv.EnsureTools(ctx, cli); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		refs = append(refs, testenv.ToolsImage)
	}
	for _, ref := range refs {
		res, err := cli.ImageInspect(ctx, ref)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("testimages: %s ready (%s, %.1f MB)\n", ref, res.ID, float64(res.Size)/1e6)
	}
	fmt.Printf("testimages: done in %s\n", time.Since(start).Round(100*time.Millisecond))
}
