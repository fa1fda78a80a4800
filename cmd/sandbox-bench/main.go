// Command sandbox-bench measures the sandbox's operations against a real
// Docker daemon and prints the median milliseconds of each as JSON: on the
// shared helper channel (the default path) at the top level, on a docker
// exec per operation under "per_exec", one plain SDK exec of `true` as
// "raw_exec", a warm pool's acquire as "pool_acquire", `docker cp` of the
// same 32 MiB file when the docker CLI is installed, fs.WalkDir over 10,000
// files as "walkdir_10k" (beside find over them in the container,
// "find_10k"), Pause and Resume of a sandbox running a command as "pause"
// and "resume" (beside the engine's own "docker_pause" and
// "docker_unpause" of it), and the host process's peak RSS while one
// command prints 256 MiB.
//
//	go run ./cmd/sandbox-bench -image python:3.13-slim -n 20 [-load]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/client"
)

func main() {
	image := flag.String("image", sandbox.DefaultImage, "image to benchmark on (it must be on the daemon)")
	n := flag.Int("n", 20, "iterations per operation")
	load := flag.Bool("load", false, "also measure throughput: 200 concurrent Executes on one sandbox, 50 sandboxes alive at once")
	durable := flag.Bool("durable", false, "also measure snapshot_100m, fork_10, persist_100m, hydrate_100m beside docker commit, ten New, docker cp out and in")
	only := flag.String("only", "", "run only these comma-separated groups: "+strings.Join(onlyGroups, ", "))
	rssChild := flag.Bool("rss-child", false, "internal: run only the 256 MiB output measurement")
	flag.Usage = usage
	flag.Parse()
	if *n < 1 {
		fail(fmt.Errorf("-n must be at least 1"))
	}
	ctx := context.Background()
	if *rssChild {
		fail(bigOutput(ctx, *image))
		return
	}
	cli, err := client.New(client.FromEnv)
	fail(err)
	defer cli.Close()
	b := &bench{cli: cli, n: *n, opts: []sandbox.Option{
		sandbox.WithImage(*image), sandbox.WithClient(cli), sandbox.WithPullPolicy(sandbox.PullNever),
	}}
	if runOnly(ctx, b, *only) {
		return
	}

	out := map[string]any{}
	fastest, err := b.operations(ctx, true)
	fail(err)
	for k, v := range fastest {
		out[k] = v
	}
	walk, err := b.walkDir(ctx)
	fail(err)
	for k, v := range walk {
		out[k] = v
	}
	perExec, err := b.operations(ctx, false)
	fail(err)
	out["per_exec"] = perExec
	lifecycle, err := b.lifecycle(ctx)
	fail(err)
	for k, v := range lifecycle {
		out[k] = v
	}
	pr, err := b.pauseResume(ctx)
	fail(err)
	for k, v := range pr {
		out[k] = v
	}
	b.addPorts(ctx, out) // dial_rtt, forward_mb_s, published_port_mb_s (ports.go)

	procs, err := b.processes(ctx) // process.go
	fail(err)
	for k, v := range procs {
		out[k] = v
	}
	if cp, err := b.dockerCP(ctx); err == nil {
		for k, v := range cp {
			out[k] = v
		}
	} else {
		fmt.Fprintln(os.Stderr, "sandbox-bench: docker cp comparison skipped:", err)
	}
	if *durable {
		d, err := b.durable(ctx)
		fail(err)
		for k, v := range d {
			out[k] = v
		}
	}
	if *load {
		l, err := b.load(ctx)
		fail(err)
		out["load"] = l
	}
	rss, err := peakRSS(*image)
	fail(err)
	out["peak_rss_mib"] = rss
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	fail(enc.Encode(out))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	cli  *client.Client
	n    int
	opts []sandbox.Option
}

// samples collects durations per operation name.
type samples map[string][]time.Duration

// time runs fn once and records how long it took under name.
func (s samples) time(name string, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	s[name] = append(s[name], time.Since(start))
	return nil
}

// medians returns each operation's median in milliseconds.
func (s samples) medians() map[string]float64 {
	out := map[string]float64{}
	for name, d := range s {
		slices.Sort(d)
		m := d[len(d)/2]
		if len(d)%2 == 0 {
			m = (d[len(d)/2-1] + d[len(d)/2]) / 2
		}
		out[name] = math.Round(float64(m.Nanoseconds())/1e3) / 1e3 // ms, to the microsecond
	}
	return out
}

// usage prints the flags, without the internal ones (their usage starts
// with "internal:"), which the command passes to itself.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: sandbox-bench [-image IMAGE] [-n N] [-load]\n")
	shown := flag.NewFlagSet("sandbox-bench", flag.ContinueOnError)
	flag.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, "internal:") {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.SetOutput(out)
	shown.PrintDefaults()
}
