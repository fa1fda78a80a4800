package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/internal/tarx"
)

// Lifetimes are a sandbox's lifetime and idle timeout, as its helper
// enforces them (see WithLifetime, WithIdleTimeout); 0 is none.
type Lifetimes struct {
	// Lifetime is how long the sandbox may run, counted from its start;
	// time spent paused does not count.
	Lifetime time.Duration
	// IdleTimeout is how long it may go without a call before it ends.
	IdleTimeout time.Duration
}

// Files next to the helper through which a running sandbox's limits are
// changed (internal/helper reads them: LifetimeFile, IdleFile).
const (
	lifetimeFile = helperDir + "/lifetime"
	idleFile     = helperDir + "/idle"
)

// maxLimitFile bounds what is read of a limit file.
const maxLimitFile = 64

// Lifetimes returns the sandbox's lifetime and idle timeout as they are
// now: those it was made with, or those last set by SetLifetime and
// SetIdleTimeout, from any handle or process (they live in the container,
// so an Attach reads them too).
func (s *DockerSandbox) Lifetimes(ctx context.Context) (Lifetimes, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if s.closed.Load() {
		return Lifetimes{}, ErrClosed
	}
	info, err := s.eng.Inspect(ctx, s.id)
	if err != nil {
		return Lifetimes{}, s.dockerErr("lifetimes", err)
	}
	var l Lifetimes
	l.Lifetime, l.IdleTimeout = entrypointLimits(info.Command)
	for _, f := range []struct {
		path string
		d    *time.Duration
	}{{lifetimeFile, &l.Lifetime}, {idleFile, &l.IdleTimeout}} {
		d, ok, err := s.readLimit(ctx, f.path)
		if err != nil {
			return Lifetimes{}, err
		}
		if ok {
			*f.d = d
		}
	}
	return l, nil
}

// SetLifetime changes how long the sandbox may run, counted from its start
// (paused time excluded): a longer d extends it, a shorter one ends it
// earlier, and one it already ran for ends it now; 0 removes the lifetime.
// The helper applies the value within about half a second; it lives in
// the container and also applies after Stop and Restart.
//
// A sandbox made without a lifetime or idle timeout is not removed by the
// engine when a lifetime set later ends it: it is left exited, for Close
// or Prune. The value is written as root into the helper's directory, out
// of reach of a non-root sandbox user (root in the sandbox could rewrite
// it: see SECURITY.md).
func (s *DockerSandbox) SetLifetime(ctx context.Context, d time.Duration) error {
	return s.setLimit(ctx, lifetimeFile, "lifetime", d)
}

// SetIdleTimeout changes how long the sandbox may go without a call before
// it ends; the idle clock starts again at the change. 0 removes the idle
// timeout. As with SetLifetime, the value lives in the container.
func (s *DockerSandbox) SetIdleTimeout(ctx context.Context, d time.Duration) error {
	return s.setLimit(ctx, idleFile, "idle timeout", d)
}

func (s *DockerSandbox) setLimit(ctx context.Context, file, what string, d time.Duration) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if d < 0 {
		return fmt.Errorf("%w: %s %v is negative", ErrInvalidOption, what, d)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	r, err := tarx.NewReader(tarx.File{Name: path.Base(file), Content: []byte(d.String() + "\n"), Mode: 0o644, ModTime: time.Now()})
	if err != nil {
		return err
	}
	err = s.eng.CopyTo(ctx, s.id, helperDir, r)
	if err != nil {
		return s.dockerErr("set "+what, err)
	}
	return nil
}

// readLimit reads a limit file; ok is false when there is none.
func (s *DockerSandbox) readLimit(ctx context.Context, file string) (time.Duration, bool, error) {
	rc, err := s.eng.CopyFrom(ctx, s.id, file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, s.dockerErr("lifetimes", err)
	}
	defer rc.Close()
	b, err := tarx.ReadFile(rc, maxLimitFile)
	if err != nil {
		return 0, false, fmt.Errorf("sandbox %s: %w: %s was replaced: %w", s.ID(), ErrHelper, file, err)
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(bytes.ToValidUTF8(b, nil))))
	if err != nil || d < 0 {
		return 0, false, fmt.Errorf("sandbox %s: %w: %s holds %q, not a duration", s.ID(), ErrHelper, file, safeLimit(b))
	}
	return d, true, nil
}

func safeLimit(b []byte) string { return strings.ToValidUTF8(string(b), "?") }

// entrypointLimits reads the -lifetime and -idle values New gave the helper.
func entrypointLimits(args []string) (lifetime, idle time.Duration) {
	for i := 0; i+1 < len(args); i++ {
		d, err := time.ParseDuration(args[i+1])
		if err != nil {
			continue
		}
		switch args[i] {
		case "-lifetime":
			lifetime = d
		case "-idle":
			idle = d
		}
	}
	return lifetime, idle
}
