package sandbox

import (
	"errors"
	"fmt"

	"github.com/dockersandbox/sandbox/engine"
)

// WithEngine makes the sandbox run on e: DockerEngine's value, or another
// engine (Kubernetes', from its own module). Without it, New connects to
// Docker from the environment (or as WithClient or WithClientOptions
// say); it excludes those two: one way chooses the engine. The sandbox
// does not close e: the caller does, after the sandboxes it made are
// closed. It applies to New, Attach, List, Prune, and on Docker to the
// snapshot functions.
//
// On an engine other than Docker's, the Docker-only options are refused
// with ErrInvalidOption naming the option and the engine: WithVolumes,
// WithDNS, WithGPUs, WithDevices, WithUlimits, WithRuntime, WithShmSize,
// WithContainerConfig, WithNetworkMode other than "none", WithPullPolicy
// other than PullMissing, WithPullProgress, and FromSnapshot; Snapshot
// fails with an error wrapping errors.ErrUnsupported.
func WithEngine(e engine.Engine) Option {
	return func(o *options) error {
		if e == nil {
			return fmt.Errorf("nil engine")
		}
		o.engine = e
		return nil
	}
}

// checkEngine refuses WithEngine beside WithClient or WithClientOptions.
func (o *options) checkEngine() error {
	if o.engine != nil && (o.client != nil || len(o.clientOpts) > 0) {
		return fmt.Errorf("%w: WithEngine excludes WithClient and WithClientOptions (make the Docker engine with DockerEngine(ctx, clientOptions...))", ErrInvalidOption)
	}
	return nil
}

// neutral refuses the options that only the Docker engine has, for New
// on the engine named name.
func (o *options) neutral(name string) error {
	var used []string
	for _, c := range []struct {
		set  bool
		name string
	}{
		{len(o.binds) > 0, "WithVolumes"},
		{len(o.dns) > 0, "WithDNS"},
		{o.gpus != 0, "WithGPUs"},
		{len(o.devices) > 0, "WithDevices"},
		{len(o.ulimits) > 0, "WithUlimits"},
		{o.runtime != "", "WithRuntime"},
		{o.shmSize != 0, "WithShmSize"},
		{len(o.configure) > 0, "WithContainerConfig"},
		{o.networkMode != "" && o.networkMode != "none", fmt.Sprintf("WithNetworkMode(%q)", o.networkMode)},
		{o.pullPolicy != PullMissing, "WithPullPolicy"},
		{o.pullProgress != nil, "WithPullProgress"},
		{o.snap.id != "", "FromSnapshot"},
	} {
		if c.set {
			used = append(used, c.name)
		}
	}
	if len(used) > 0 {
		return fmt.Errorf("%w: %v: Docker only, not on the %s engine", ErrInvalidOption, used, name)
	}
	return nil
}

// dockerOf returns eng as the Docker engine, or an error wrapping
// errors.ErrUnsupported that says what needs Docker.
func dockerOf(eng engine.Engine, what string) (*dockerEngine, error) {
	if d, ok := eng.(*dockerEngine); ok {
		return d, nil
	}
	return nil, fmt.Errorf("sandbox: %s needs the Docker engine, not %s: %w", what, eng.Name(), errors.ErrUnsupported)
}
