// Package bench is the body of the sandbox-bench command (cmd/sandbox-bench,
// and the k8s module's k8s/cmd/sandbox-bench, which adds the Kubernetes
// engine).
package bench

import (
	"cmp"
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
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/engineflag"
	"github.com/moby/moby/client"
)

// Main runs the bench with the command line args (without the program
// name) on the engine -engine names among engines, and exits on failure:
// the body of the sandbox-bench command.
func Main(engines *engineflag.Set, args []string) {
	fs := flag.CommandLine
	image := fs.String("image", sandbox.DefaultImage, "image to benchmark on (it must be on the daemon, or the cluster's node)")
	n := fs.Int("n", 20, "iterations per operation")
	load := fs.Bool("load", false, "also measure throughput: 200 concurrent Executes on one sandbox, 50 sandboxes alive at once")
	durable := fs.Bool("durable", false, "also measure snapshot_100m, fork_10, persist_100m, hydrate_100m beside docker commit, ten New, docker cp out and in (Docker only)")
	only := fs.String("only", "", "run only these comma-separated groups: "+strings.Join(onlyGroups, ", "))
	user := fs.String("user", "", "`user` of the sandboxes (default the image's; on Kubernetes a numeric uid:gid)")
	runtime := fs.String("runtime", "", "OCI `runtime` of the sandboxes on Docker, e.g. runsc for gVisor (default the daemon's); a comma-separated list runs the bench once per runtime, alternated, and prints each runtime's runs")
	rounds := fs.Int("rounds", 1, "how many times to run the bench (alternating the runtimes of -runtime, round by round)")
	rssChild := fs.Bool("rss-child", false, "internal: run only the 256 MiB output measurement")
	choice := engines.AddFlags(fs)
	fs.Usage = usage
	fail(fs.Parse(args))
	if *n < 1 {
		fail(fmt.Errorf("-n must be at least 1"))
	}
	if *rounds < 1 {
		fail(fmt.Errorf("-rounds must be at least 1"))
	}
	var groups []string
	if *only != "" {
		var err error
		groups, err = parseOnly(*only) // before anything runs
		fail(err)
	}
	runtimes := strings.Split(*runtime, ",")
	for i, rt := range runtimes {
		if (*runtime != "" && strings.TrimSpace(rt) == "") || slices.Contains(runtimes[:i], rt) {
			fail(fmt.Errorf("-runtime %q: give each runtime once, none empty", *runtime))
		}
	}
	ctx := context.Background()
	b := &bench{n: *n, args: args, image: *image}
	engOpts, eng, err := choice.Open(ctx)
	fail(err)
	if eng != nil {
		defer eng.Close()
		b.eng = eng
		b.opts = append(engOpts, sandbox.WithImage(*image))
	} else {
		cli, err := client.New(client.FromEnv)
		fail(err)
		defer cli.Close()
		b.cli = cli
		docker, err := sandbox.DockerEngine(ctx)
		fail(err)
		defer docker.Close()
		b.opts = []sandbox.Option{sandbox.WithImage(*image), sandbox.WithEngine(docker), sandbox.WithPullPolicy(sandbox.PullNever)}
	}
	if *user != "" {
		b.opts = append(b.opts, sandbox.WithUser(*user))
	}
	if *runtime != "" && !b.docker() {
		fail(fmt.Errorf("-runtime: an OCI runtime is Docker's option"))
	}
	if *rssChild {
		if *runtime != "" {
			b.opts = append(b.opts, sandbox.WithRuntime(runtimes[len(runtimes)-1]))
		}
		fail(bigOutput(ctx, b.opts))
		return
	}
	if *durable && !b.docker() {
		fail(fmt.Errorf("-durable: snapshots, forks, persist and hydrate need the Docker engine"))
	}
	run := func(rt string) map[string]any {
		rb := *b
		rb.opts = slices.Clip(b.opts)
		if rt != "" {
			rb.opts = append(rb.opts, sandbox.WithRuntime(rt))
			rb.args = append(slices.Clip(args), "-runtime", rt) // the RSS child's: the last -runtime counts
		}
		if *only != "" {
			return runOnly(ctx, &rb, groups)
		}
		return rb.all(ctx, *durable, *load)
	}
	var out any
	if len(runtimes) == 1 && *rounds == 1 {
		out = run(*runtime)
	} else {
		// Alternated, round by round, so that what else the machine does
		// weighs on every runtime alike; the daemon's default is "default".
		byRuntime := map[string][]map[string]any{}
		for round := range *rounds {
			for _, rt := range runtimes {
				key := cmp.Or(rt, "default")
				fmt.Fprintf(os.Stderr, "sandbox-bench: runtime %s, round %d of %d\n", key, round+1, *rounds)
				byRuntime[key] = append(byRuntime[key], run(rt))
			}
		}
		out = byRuntime
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	fail(enc.Encode(out))
}

// all runs the whole bench (with -durable's and -load's groups if asked)
// and returns its keys.
func (b *bench) all(ctx context.Context, durable, load bool) map[string]any {
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
	if b.docker() { // a pod can be neither paused nor resumed
		if pr, err := b.pauseResume(ctx); err == nil {
			for k, v := range pr {
				out[k] = v
			}
		} else { // the other keys are still worth printing: these are left out
			fmt.Fprintln(os.Stderr, "sandbox-bench: pause comparison skipped:", err)
		}
	}
	if m, err := b.usage(ctx); err == nil { // usage.go
		for k, v := range m {
			out[k] = v
		}
	} else { // Kubernetes cannot measure a pod (errors.ErrUnsupported)
		fmt.Fprintln(os.Stderr, "sandbox-bench: usage skipped:", err)
	}
	b.addPorts(ctx, out) // dial_rtt, forward_mb_s, published_port_mb_s (ports.go)
	if b.docker() {
		if m, err := b.egress(ctx); err == nil { // egress.go
			for k, v := range m {
				out[k] = v
			}
		} else {
			fmt.Fprintln(os.Stderr, "sandbox-bench: egress comparison skipped:", err)
		}
	}

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
	if durable {
		d, err := b.durable(ctx)
		fail(err)
		for k, v := range d {
			out[k] = v
		}
	}
	if load {
		l, err := b.load(ctx)
		fail(err)
		out["load"] = l
	}
	rss, err := peakRSS(b.args)
	fail(err)
	out["peak_rss_mib"] = rss
	return out
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	cli   *client.Client // Docker's client; nil on another engine
	eng   engine.Engine  // another engine (-engine); nil on Docker
	n     int
	image string // -image
	opts  []sandbox.Option
	args  []string // the command line, for the RSS child
}

// docker reports whether the bench runs on Docker (Podman included).
func (b *bench) docker() bool { return b.cli != nil }

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
	fmt.Fprintf(out, "usage: sandbox-bench [-engine ENGINE] [-image IMAGE] [-n N] [-load] [-only GROUPS] [-runtime RUNTIME[,RUNTIME...]] [-rounds N]\n")
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
