package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// ErrPaused: the sandbox is paused (Pause, WithAutoPause, or the engine's
// pause from outside) and the call was not made. Resume it first, or make
// the sandbox WithAutoResume.
var ErrPaused = errors.New("sandbox: paused")

// ErrStopped: the sandbox is stopped (Stop, or Close with
// WithAutoRemove(false)): its files are kept, its processes are gone.
// Start starts it again; Attach with WithStart reattaches to it. It also
// matches ErrGone.
var ErrStopped = fmt.Errorf("%w: stopped", ErrGone)

// durableOptions are the options of pause, stop and lifetimes.
type durableOptions struct {
	autoResume bool
	autoPause  time.Duration // 0: never
	start      bool          // Attach starts a stopped sandbox
}

// WithAutoResume makes a call on a paused sandbox resume it first, instead
// of failing with ErrPaused. It applies to New and Attach.
func WithAutoResume() Option {
	return func(o *options) error {
		o.durable.autoResume = true
		return nil
	}
}

// WithAutoPause pauses the sandbox when no call ran on this handle for
// idle, and resumes it on the next call (it implies WithAutoResume). A
// running command, Cmd or file operation counts as a call however long it
// runs. It applies to New and Attach, to the handle that has it: calls
// from other handles or processes do not count and find it paused.
func WithAutoPause(idle time.Duration) Option {
	return func(o *options) error {
		if idle <= 0 {
			return fmt.Errorf("auto-pause idle time %v must be positive", idle)
		}
		o.durable.autoPause, o.durable.autoResume = idle, true
		return nil
	}
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
func (s *DockerSandbox) Paused() bool {
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
func (s *DockerSandbox) Pause(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return s.pause(ctx, false)
}

// Resume thaws a paused sandbox, also one paused by another handle or from
// outside; resuming a running one does nothing.
func (s *DockerSandbox) Resume(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if _, err := s.change(ctx, false, func() bool { return false }); err != nil {
		return err
	}
	err := s.unpause(ctx)
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
func (s *DockerSandbox) pause(ctx context.Context, auto bool) error {
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
func (s *DockerSandbox) change(ctx context.Context, onStopped bool, nothing func() bool) (bool, error) {
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
func (s *DockerSandbox) endChange(apply func()) {
	s.life.mu.Lock()
	apply()
	close(s.life.moving)
	s.life.moving = nil
	s.life.mu.Unlock()
}

// engineState is the container's state as the engine says ("" if unknown),
// asked within a few seconds even when ctx has ended (a request it cut
// short may have been done all the same).
func (s *DockerSandbox) engineState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateTimeout)
	defer cancel()
	info, err := s.eng.Inspect(ctx, s.id)
	if err != nil {
		return ""
	}
	return string(info.State)
}

// unpause thaws the sandbox, if the engine can.
func (s *DockerSandbox) unpause(ctx context.Context) error {
	if p, ok := s.eng.(engine.Pauser); ok {
		return p.Unpause(ctx, s.id)
	}
	return s.noPause()
}

// noPause is the error of an engine that cannot pause.
func (s *DockerSandbox) noPause() error {
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
func (s *DockerSandbox) enter(ctx context.Context) error {
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
func (s *DockerSandbox) leave() {
	s.life.mu.Lock()
	s.life.inflight--
	s.life.mu.Unlock()
	s.armAutoPause()
}

// armAutoPause starts the auto-pause timer when nothing is in flight.
func (s *DockerSandbox) armAutoPause() {
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
func (s *DockerSandbox) stopAutoPause() {
	s.life.mu.Lock()
	defer s.life.mu.Unlock()
	s.life.gen++
	if s.life.timer != nil {
		s.life.timer.Stop()
	}
}

// silence is how long the helper has been silent since last (unix
// nanoseconds), not counting time the sandbox was paused by this handle:
// a frozen helper says nothing.
func (s *DockerSandbox) silence(last int64) time.Duration {
	if s.life.frozen.Load() {
		return 0
	}
	return time.Since(time.Unix(0, max(last, s.life.resumed.Load())))
}

// watchSilence is the package's watchSilence, with silence measured as
// s.silence does.
func (s *DockerSandbox) watchSilence(stop <-chan struct{}, last func() int64, limit time.Duration, silent func()) {
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if since := last(); since != 0 && s.silence(since) > limit {
				silent()
				return
			}
		}
	}
}

// pausedWithin reports whether this handle had the sandbox paused at some
// time in the last d.
func (s *DockerSandbox) pausedWithin(d time.Duration) bool {
	return s.life.frozen.Load() || time.Since(time.Unix(0, s.life.resumed.Load())) < d
}
