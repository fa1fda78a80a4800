package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dockersandbox/sandbox/engine"
)

// WithStart makes Attach start a stopped sandbox (see Stop) before it
// attaches to it; without it, Attach fails on one with ErrStopped.
func WithStart() Option {
	return func(o *options) error {
		o.durable.start = true
		return nil
	}
}

// stopTimeout is how long Stop lets the helper end before the engine kills
// the container (the helper exits at once on SIGTERM).
const stopTimeout = 5 * time.Second

// Stop stops the sandbox and keeps its container, its files and this
// handle. Every process in it ends: commands running, and the helper (PID
// 1). Calls in flight fail (with ErrGone), and later calls with ErrStopped,
// until Restart starts it again. A paused sandbox is stopped too. Stopping a
// stopped sandbox does nothing.
//
// Close with WithAutoRemove(false) stops the sandbox the same way, but
// releases the handle: Attach with WithStart reattaches to it.
//
// A sandbox that the engine removes when it ends (made with a lifetime or
// an idle timeout, and auto-remove on, as by default) cannot be stopped:
// Stop fails with ErrInvalidOption; make it WithAutoRemove(false).
func (s *DockerSandbox) Stop(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if _, err := s.stopper(); err != nil {
		return err
	}
	info, err := s.eng.Inspect(ctx, s.id)
	if err != nil {
		return s.dockerErr("stop", err)
	}
	if info.RemoveOnExit {
		return fmt.Errorf("%w: sandbox %s is removed by the engine when it stops (a lifetime or idle timeout with auto-remove on): make it WithAutoRemove(false) to stop and start it", ErrInvalidOption, s.ID())
	}
	done, err := s.change(ctx, true, func() bool { return s.life.stopped })
	if err != nil || done {
		return err
	}
	s.stopAutoPause()
	s.chMu.Lock()
	if s.ch != nil {
		s.ch.breakWith(ErrStopped)
	}
	s.chMu.Unlock()
	err = s.stopContainer(ctx, stopTimeout)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		if st := s.engineState(ctx); st == "exited" || st == "created" {
			err = nil
		}
	}
	s.endChange(func() {
		if err == nil {
			s.life.stopped, s.life.paused = true, false
			s.life.resumed.Store(time.Now().UnixNano())
			s.life.frozen.Store(false)
		}
	})
	if err != nil {
		return s.dockerErr("stop", err)
	}
	return nil
}

// Restart starts again a sandbox that Stop stopped, with the working directory,
// user, options and files it had (under WithSecureProfile, the working
// directory and /tmp are in memory: they start empty). The helper is PID 1
// again; no process of before runs: a Cmd started before Stop has ended
// with an error, and its process is gone. The lifetime counts again from
// the start, with the values last set (SetLifetime, SetIdleTimeout).
// Restarting a running sandbox does nothing (unlike docker restart, it
// never stops one).
func (s *DockerSandbox) Restart(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	done, err := s.change(ctx, true, func() bool { return !s.life.stopped })
	if err != nil || done {
		return err
	}
	st, err := s.stopper()
	if err != nil {
		s.endChange(func() {})
		return err
	}
	err = st.Start(ctx, s.id)
	s.endChange(func() {
		if err == nil {
			s.life.stopped = false
		}
	})
	if err != nil {
		return s.dockerErr("start", err)
	}
	s.armAutoPause()
	return nil
}

// stopContainer stops the container, also a paused one: Podman 4.3 refuses
// to stop a paused container ("container state improper"), so it is
// resumed first (its helper then exits at once on the stop signal).
func (s *DockerSandbox) stopContainer(ctx context.Context, grace time.Duration) error {
	st, err := s.stopper()
	if err != nil {
		return err
	}
	p, canPause := s.eng.(engine.Pauser)
	if canPause && s.life.frozen.Load() {
		_ = p.Unpause(ctx, s.id)
	}
	err = st.Stop(ctx, s.id, grace)
	if err != nil && canPause && !errors.Is(err, engine.ErrNotFound) && s.engineState(ctx) == "paused" { // paused from outside
		_ = p.Unpause(ctx, s.id)
		err = st.Stop(ctx, s.id, grace)
	}
	return err
}

// stopper returns the engine as an engine.Stopper, or an error wrapping
// errors.ErrUnsupported.
func (s *DockerSandbox) stopper() (engine.Stopper, error) {
	st, ok := s.eng.(engine.Stopper)
	if !ok {
		return nil, fmt.Errorf("sandbox %s: the %s engine cannot stop and start a sandbox: %w", s.ID(), s.eng.Name(), errors.ErrUnsupported)
	}
	return st, nil
}

// Stopped reports whether the sandbox is stopped, as this handle knows it.
func (s *DockerSandbox) Stopped() bool {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	return s.life.stopped
}

// startStopped starts, for Attach WithStart, a sandbox container that ran
// and stopped.
func startStopped(ctx context.Context, eng engine.Engine, id string) error {
	st, ok := eng.(engine.Stopper)
	if !ok {
		return fmt.Errorf("sandbox: attach %s: the %s engine cannot start a stopped sandbox: %w", id, eng.Name(), errors.ErrUnsupported)
	}
	if err := st.Start(ctx, id); err != nil {
		return fmt.Errorf("sandbox: attach %s: start: %w", id, daemonErr(err))
	}
	return nil
}
