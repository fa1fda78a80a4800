// Command testimages builds the local Docker images used by the integration
// tests (see package internal/testenv), if they are missing: the busybox
// and Debian images, and the tools image of the egress tests. CI runs it once
// before `go test` so that test packages don't wait on each other for it,
// and the tools image (-tools-only) in the background beside the tests:
// TestEgressTools waits for its lock.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
)

func main() {
	busyboxOnly := flag.Bool("busybox-only", false, "build only the busybox image (fast; what the quickstart needs)")
	tools := flag.Bool("tools", true, "also build the tools image (curl, git, pip, npm) of the egress tests, which run on Docker only")
	toolsOnly := flag.Bool("tools-only", false, "build only the tools image (CI builds it in the background: its lock is its own)")
	flag.Parse()
	if *toolsOnly && (*busyboxOnly || !*tools) {
		fmt.Fprintln(os.Stderr, "testimages: -tools-only goes with neither -busybox-only nor -tools=false")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cli, err := testenv.NewClient(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cli.Close()

	start := time.Now()
	type image struct {
		ref    string
		ensure func(context.Context, *client.Client) error
	}
	images := []image{{testenv.BusyboxImage, testenv.EnsureBusybox}, {testenv.DebianImage, testenv.EnsureDebian}}
	switch {
	case *busyboxOnly:
		images = images[:1]
	case *toolsOnly:
		images = nil
	}
	if *tools && !*busyboxOnly {
		images = append(images, image{testenv.ToolsImage, testenv.EnsureTools})
	}
	var refs []string
	for _, img := range images {
		if err := img.ensure(ctx, cli); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		refs = append(refs, img.ref)
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
