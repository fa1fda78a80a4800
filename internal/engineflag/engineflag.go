// Package engineflag is the -engine flag of the commands (sandbox,
// sandbox-bench, sandbox-mcp): which engine their sandboxes run on. Docker
// (and Podman, through DOCKER_HOST) is always there and the default; the
// binaries of other modules register theirs (the k8s module's mains add
// "kubernetes"), so that the core module does not import their clients.
package engineflag

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
)

// Docker is the name of the default engine: the Docker API at DOCKER_HOST
// (a Podman socket included), as sandbox.New connects without WithEngine.
const Docker = "docker"

// Opener makes the engine of one run of a command, from the flag values
// its Kind registered.
type Opener func(ctx context.Context) (engine.Engine, error)

// Kind is an engine a binary can run on.
type Kind struct {
	// Name is the -engine value: "kubernetes".
	Name string
	// Flags registers the engine's own flags (-kubeconfig, -namespace)
	// on fs and returns the Opener that uses their values.
	Flags func(fs *flag.FlagSet) Opener
}

// Set is the engines a binary knows: Docker, the kinds it registered, and
// those it names only to say which binary has them.
type Set struct {
	kinds     []Kind
	elsewhere map[string]string // engine name → where to get a binary that has it
}

// New returns a Set with Docker only; every other known engine is refused
// with where saying which binary has it.
func New(elsewhere map[string]string) *Set {
	return &Set{elsewhere: elsewhere}
}

// Register adds an engine; its name is no longer refused.
func (s *Set) Register(k Kind) {
	s.kinds = append(s.kinds, k)
	delete(s.elsewhere, k.Name)
}

// Names lists the engines the binary has, Docker first.
func (s *Set) Names() []string {
	names := []string{Docker}
	for _, k := range s.kinds {
		names = append(names, k.Name)
	}
	return names
}

// Choice is the -engine flag of one flag set, with the engines' own flags.
type Choice struct {
	set     *Set
	name    string
	openers map[string]Opener
}

// AddFlags adds -engine (default docker) and every registered engine's
// flags to fs.
func (s *Set) AddFlags(fs *flag.FlagSet) *Choice {
	c := &Choice{set: s, openers: map[string]Opener{}}
	fs.StringVar(&c.name, "engine", Docker, "`engine` to run sandboxes on: "+strings.Join(s.Names(), " or ")+
		" (docker: the Docker API at DOCKER_HOST, Podman's socket included)")
	for _, k := range s.kinds {
		c.openers[k.Name] = k.Flags(fs)
	}
	return c
}

// Name is the engine chosen.
func (c *Choice) Name() string { return c.name }

// IsDocker reports whether the engine is Docker's (the default).
func (c *Choice) IsDocker() bool { return c.name == Docker }

// Open makes the chosen engine and returns the sandbox options that run on
// it (none for Docker: sandbox.New connects from the environment) and the
// engine (nil for Docker), which the caller closes after its sandboxes.
// An engine this binary does not have is an error naming the binary that
// has it.
func (c *Choice) Open(ctx context.Context) ([]sandbox.Option, engine.Engine, error) {
	if c.name == Docker {
		return nil, nil, nil
	}
	open, ok := c.openers[c.name]
	if !ok {
		if where, known := c.set.elsewhere[c.name]; known {
			return nil, nil, fmt.Errorf("%w: -engine %s: this binary has %s only; the %s engine is in %s",
				ErrUnknown, c.name, strings.Join(c.set.Names(), " and "), c.name, where)
		}
		return nil, nil, fmt.Errorf("%w: -engine %q: want %s", ErrUnknown, c.name, strings.Join(c.set.Names(), " or "))
	}
	eng, err := open(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("engine %s: %w", c.name, err)
	}
	return []sandbox.Option{sandbox.WithEngine(eng)}, eng, nil
}

// ForCommand returns the Set of a core binary (sandbox, sandbox-bench,
// sandbox-mcp): Docker, and "kubernetes" refused with the command that
// builds the k8s module's binary of the same name, which has both.
func ForCommand(binary string) *Set {
	return New(map[string]string{
		"kubernetes": fmt.Sprintf("the k8s module's %s; build it from a clone with: go build -C k8s -o \"$(go env GOPATH)/bin/%s\" ./cmd/%s",
			binary, binary, binary),
	})
}
