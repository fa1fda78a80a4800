package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/byteflag"
	"github.com/dockersandbox/sandbox/internal/egressflag"
)

func create(ctx context.Context, args []string) error {
	fs := newFlags("create", "[flags]")
	image := fs.String("image", sandbox.DefaultImage, "image")
	name := fs.String("name", "", "container name")
	network := fs.String("network", "", `network mode, e.g. "none"`)
	var memory byteflag.Size
	fs.Var(&memory, "memory", "memory `limit`, in bytes or with a unit: 512m, 2g (default none)")
	cpus := fs.Float64("cpus", 0, "CPU limit, e.g. 0.5")
	pids := fs.Int64("pids", 0, "process count limit")
	workdir := fs.String("workdir", sandbox.DefaultWorkingDir, "working directory")
	user := fs.String("user", "", "user to run as")
	lifetime := fs.Duration("lifetime", 0, "end the sandbox after this long (0: never)")
	idle := fs.Duration("idle", 0, "end the sandbox when unused for this long (0: never)")
	secure := fs.Bool("secure", false, "apply the secure profile (see SECURITY.md)")
	pull := fs.String("pull", "missing", "pull policy: missing, always or never")
	quiet := fs.Bool("q", false, "no pull progress on stderr")
	asJSON := fs.Bool("json", false, `print {"id"} as JSON`)
	choice := engineFlags(fs)
	egress := egressflag.AddFlags(fs)
	var env, labels multiFlag
	fs.Var(&env, "env", "KEY=value for the sandbox (repeatable)")
	fs.Var(&labels, "label", "put the label `key=value` on the sandbox, for ls and prune -label (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: create takes no arguments", errUsage)
	}
	policy, ok := map[string]sandbox.PullPolicy{"missing": sandbox.PullMissing, "always": sandbox.PullAlways, "never": sandbox.PullNever}[*pull]
	if !ok {
		return fmt.Errorf("%w: -pull %q: want missing, always or never", errUsage, *pull)
	}
	egressPolicy, err := egress.Policy(os.Getenv, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	opts, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	opts = append(opts,
		sandbox.WithImage(*image), sandbox.WithWorkingDir(*workdir), sandbox.WithPullPolicy(policy),
		sandbox.WithOwner("cli"), // outlives this process: not an orphan for prune -dead-owners
	)
	if choice.IsDocker() { // the pull's progress is Docker's (another engine's node pulls)
		var progress io.Writer = os.Stderr
		if *quiet || *asJSON {
			progress = io.Discard
		}
		opts = append(opts, sandbox.WithPullProgress(progress))
	}
	add := func(cond bool, o sandbox.Option) {
		if cond {
			opts = append(opts, o)
		}
	}
	add(*name != "", sandbox.WithName(*name))
	add(*network != "", sandbox.WithNetworkMode(*network))
	add(memory != 0, sandbox.WithMemory(int64(memory)))
	add(*cpus != 0, sandbox.WithCPUs(*cpus))
	add(*pids != 0, sandbox.WithPidsLimit(*pids))
	add(*user != "", sandbox.WithUser(*user))
	add(*lifetime != 0, sandbox.WithLifetime(*lifetime))
	add(*idle != 0, sandbox.WithIdleTimeout(*idle))
	add(*secure, sandbox.WithSecureProfile())
	add(len(env) > 0, sandbox.WithEnv(env...))
	if egressPolicy != nil {
		opts = append(opts, sandbox.WithEgress(*egressPolicy))
	}
	if len(labels) > 0 {
		m := map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok || k == "" {
				return fmt.Errorf("%w: -label %q: want key=value", errUsage, l)
			}
			m[k] = v
		}
		opts = append(opts, sandbox.WithLabels(m))
	}
	sb, err := sandbox.New(ctx, opts...)
	if err != nil {
		return err
	}
	// Let go of it at once: its egress, if any, frees the proxy's address
	// for the "sandbox egress" that serves it next, whatever the engine
	// does with this process's helper.
	defer sb.Detach()
	if egressPolicy != nil {
		// This process's end takes the egress with it.
		fmt.Fprintf(os.Stderr, "sandbox %s has an egress policy and no other network: serve it with \"sandbox egress -egress-allow ... %s\"\n", sb.ID(), sb.ID())
	}
	if *asJSON {
		return printJSON(os.Stdout, map[string]string{"id": sb.ID()})
	}
	fmt.Println(sb.ID())
	return nil
}
