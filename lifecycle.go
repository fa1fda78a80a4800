package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/tarx"
)

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
func (s *Sandbox) Stop(ctx context.Context) (err error) {
	ctx, op := s.begin(ctx, "Stop")
	defer op.end(&err)
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
func (s *Sandbox) Restart(ctx context.Context) (err error) {
	ctx, op := s.begin(ctx, "Restart")
	defer op.end(&err)
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
func (s *Sandbox) stopContainer(ctx context.Context, grace time.Duration) error {
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
func (s *Sandbox) stopper() (engine.Stopper, error) {
	st, ok := s.eng.(engine.Stopper)
	if !ok {
		return nil, fmt.Errorf("sandbox %s: the %s engine cannot stop and start a sandbox: %w", s.ID(), s.eng.Name(), errors.ErrUnsupported)
	}
	return st, nil
}

// Stopped reports whether the sandbox is stopped, as this handle knows it.
func (s *Sandbox) Stopped() bool {
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

// durableOptions are the options of pause, stop and lifetimes.
type durableOptions struct {
	autoResume bool
	autoPause  time.Duration // 0: never
	start      bool          // Attach starts a stopped sandbox
}

// lifeState is what a handle knows of its container's state: paused,
// stopped, and the calls in flight (for WithAutoPause). Changes go one at a
// time (moving); no lock is held while the engine works.
type lifeState struct {
	mu       sync.Mutex
	paused   bool
	stopped  bool
	moving   chan struct{} // closed when the change in flight ends; nil if none
	inflight int
	gen      uint64 // counts arms of the auto-pause timer
	timer    *time.Timer
	// frozen is set from just before a pause until a resume ended, for the
	// silence watchdogs; resumed is when it was last cleared (unix nanoseconds).
	frozen  atomic.Bool
	resumed atomic.Int64
}

// Paused reports whether the sandbox is paused, as this handle knows it
// (Pause, Resume, WithAutoPause, and what Attach found).
func (s *Sandbox) Paused() bool {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	return s.life.paused
}

// Pause freezes every process in the sandbox (the engine's pause: the
// cgroup freezer). Memory stays allocated, no CPU is used, files are kept.
// While it is paused:
//   - a call on the handle fails with ErrPaused, or resumes it first with
//     WithAutoResume (and WithAutoPause);
//   - calls already in flight wait, their commands frozen (nothing is lost,
//     and the library does not take the silence for a stopped helper); their
//     contexts and timeouts keep running;
//   - neither the lifetime nor the idle timeout counts: the helper, frozen,
//     ends nothing; once resumed, the lifetime goes on where it stopped and
//     the idle clock starts again. A paused sandbox whose owner died is thus
//     ended only by Prune (or by anyone calling Close on an Attach handle);
//   - Close works (the container is killed paused) within its bound.
//
// Pausing a paused sandbox does nothing. Pause, Resume, Stop, Restart and
// the lifetime calls are bounded by their context, or by 30 s when it has
// no deadline.
func (s *Sandbox) Pause(ctx context.Context) (err error) {
	ctx, op := s.begin(ctx, "Pause")
	defer op.end(&err)
	ctx, cancel := bounded(ctx)
	defer cancel()
	return s.pause(ctx, false)
}

// Resume thaws a paused sandbox, also one paused by another handle or from
// outside; resuming a running one does nothing.
func (s *Sandbox) Resume(ctx context.Context) (err error) {
	ctx, op := s.begin(ctx, "Resume")
	defer op.end(&err)
	ctx, cancel := bounded(ctx)
	defer cancel()
	if _, err := s.change(ctx, false, func() bool { return false }); err != nil {
		return err
	}
	err = s.unpause(ctx)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) && s.engineState(ctx) == "running" {
		err = nil // not paused, or unpaused by someone else
	}
	s.endChange(func() {
		if err == nil {
			s.life.paused = false
			s.life.resumed.Store(time.Now().UnixNano())
			s.life.frozen.Store(false)
		}
	})
	if err != nil {
		return s.dockerErr("resume", err)
	}
	s.armAutoPause()
	return nil
}

// pause freezes the container; auto: only if no call is in flight.
func (s *Sandbox) pause(ctx context.Context, auto bool) error {
	done, err := s.change(ctx, false, func() bool {
		if s.life.paused || auto && s.life.inflight > 0 {
			return true
		}
		s.life.frozen.Store(true) // before the freeze: the watchdogs stop counting
		return false
	})
	if err != nil || done {
		return err
	}
	if p, ok := s.eng.(engine.Pauser); ok {
		err = p.Pause(ctx, s.id)
	} else {
		err = s.noPause()
	}
	if err != nil && !errors.Is(err, errors.ErrUnsupported) && s.engineState(ctx) == "paused" {
		err = nil // paused by someone else
	}
	s.endChange(func() {
		if err == nil {
			s.life.paused = true
		} else {
			s.life.resumed.Store(time.Now().UnixNano())
			s.life.frozen.Store(false)
		}
	})
	if err != nil {
		return s.dockerErr("pause", err)
	}
	return nil
}

// change waits for the change in flight to end, then, unless the sandbox
// is closed, or stopped (and onStopped is false), or nothing (under the
// lock) says that there is nothing to do, starts one: the caller makes it,
// then calls endChange.
func (s *Sandbox) change(ctx context.Context, onStopped bool, nothing func() bool) (bool, error) {
	for {
		if s.closed.Load() {
			return false, ErrClosed
		}
		s.life.mu.Lock()
		if m := s.life.moving; m != nil {
			s.life.mu.Unlock()
			select {
			case <-m:
				continue
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		if s.life.stopped && !onStopped {
			s.life.mu.Unlock()
			return false, fmt.Errorf("sandbox %s: %w", s.ID(), ErrStopped)
		}
		if nothing() {
			s.life.mu.Unlock()
			return true, nil
		}
		s.life.moving = make(chan struct{})
		s.life.mu.Unlock()
		return false, nil
	}
}

// endChange applies the change's outcome and ends it.
func (s *Sandbox) endChange(apply func()) {
	s.life.mu.Lock()
	apply()
	close(s.life.moving)
	s.life.moving = nil
	s.life.mu.Unlock()
}

// engineState is the container's state as the engine says ("" if unknown),
// asked within a few seconds even when ctx has ended (a request it cut
// short may have been done all the same).
func (s *Sandbox) engineState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateTimeout)
	defer cancel()
	info, err := s.eng.Inspect(ctx, s.id)
	if err != nil {
		return ""
	}
	return string(info.State)
}

// unpause thaws the sandbox, if the engine can.
func (s *Sandbox) unpause(ctx context.Context) error {
	if p, ok := s.eng.(engine.Pauser); ok {
		return p.Unpause(ctx, s.id)
	}
	return s.noPause()
}

// noPause is the error of an engine that cannot pause.
func (s *Sandbox) noPause() error {
	return fmt.Errorf("the %s engine cannot pause a sandbox: %w", s.eng.Name(), errors.ErrUnsupported)
}

// stateTimeout bounds engineState.
const stateTimeout = 5 * time.Second

// stateBound bounds Pause, Resume, Stop, Restart and the lifetime calls when
// their context has no deadline: the engine may not answer.
const stateBound = 30 * time.Second

// bounded returns ctx, bounded by stateBound when it has no deadline.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, stateBound)
}

// enter admits a call: it fails on a stopped sandbox, and on a paused one
// unless the sandbox resumes itself. Every enter that returns nil is
// followed by a leave.
func (s *Sandbox) enter(ctx context.Context) error {
	for {
		s.life.mu.Lock()
		switch {
		case s.life.moving != nil:
			m := s.life.moving
			s.life.mu.Unlock()
			select {
			case <-m:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		case s.life.stopped:
			s.life.mu.Unlock()
			return fmt.Errorf("sandbox %s: %w", s.ID(), ErrStopped)
		case s.life.paused:
			s.life.mu.Unlock()
			if !s.opts.durable.autoResume {
				return fmt.Errorf("sandbox %s: %w (Resume it, or make it WithAutoResume)", s.ID(), ErrPaused)
			}
			if err := s.Resume(ctx); err != nil {
				return err
			}
			continue
		}
		s.life.inflight++
		s.life.gen++ // disarms the auto-pause timer
		s.life.mu.Unlock()
		return nil
	}
}

// leave ends a call that enter admitted.
func (s *Sandbox) leave() {
	s.life.mu.Lock()
	s.life.inflight--
	s.life.mu.Unlock()
	s.armAutoPause()
}

// armAutoPause starts the auto-pause timer when nothing is in flight.
func (s *Sandbox) armAutoPause() {
	idle := s.opts.durable.autoPause
	if idle <= 0 {
		return
	}
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	if s.life.inflight > 0 || s.life.paused || s.life.stopped || s.closed.Load() {
		return
	}
	s.life.gen++
	gen := s.life.gen
	if s.life.timer != nil {
		s.life.timer.Stop()
	}
	s.life.timer = time.AfterFunc(idle, func() {
		s.life.mu.Lock()
		stale := gen != s.life.gen
		s.life.mu.Unlock()
		if stale || s.closed.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = s.pause(ctx, true) // a failure leaves it running; the next call tries nothing
	})
}

// stopAutoPause disarms the auto-pause timer (Close, Detach, Stop).
func (s *Sandbox) stopAutoPause() {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	s.life.gen++
	if s.life.timer != nil {
		s.life.timer.Stop()
	}
}

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
func (s *Sandbox) Lifetimes(ctx context.Context) (_ Lifetimes, err error) {
	ctx, op := s.begin(ctx, "Lifetimes")
	defer op.end(&err)
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
func (s *Sandbox) SetLifetime(ctx context.Context, d time.Duration) (err error) {
	ctx, op := s.begin(ctx, "SetLifetime")
	defer op.end(&err)
	return s.setLimit(ctx, lifetimeFile, "lifetime", d)
}

// SetIdleTimeout changes how long the sandbox may go without a call before
// it ends; the idle clock starts again at the change. 0 removes the idle
// timeout. As with SetLifetime, the value lives in the container.
func (s *Sandbox) SetIdleTimeout(ctx context.Context, d time.Duration) (err error) {
	ctx, op := s.begin(ctx, "SetIdleTimeout")
	defer op.end(&err)
	return s.setLimit(ctx, idleFile, "idle timeout", d)
}

func (s *Sandbox) setLimit(ctx context.Context, file, what string, d time.Duration) error {
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
func (s *Sandbox) readLimit(ctx context.Context, file string) (time.Duration, bool, error) {
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
