package sandbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// A helper with requests running says it is alive every
// proto.AliveInterval; the watchdogs take a helper silent for longer than
// their bound as stopped, and drop its connection. The helper's frames reach
// the library through the engine (an attached exec's stream), so two things
// silence a healthy helper and are not counted: a pause by this handle (a
// frozen helper says nothing), and a stall of the engine itself (on two
// loaded cores dockerd once took 12 s to answer a ping, and every stream it
// relays waited as long). While a silence is watched, the engine is asked
// about the sandbox (an Inspect) one call at a time; an answer slower than
// engineSlow marks a stall, and silence counts from its end, or is none
// while such an answer is awaited. An engine that gives no answer within
// handshakeTimeout, or an error, excuses nothing until it answers again: a
// frozen or dead daemon delays the verdict by that bound at most.

// maxExcuse is the most of one silence (or one blocked write) the engine's
// stalls excuse: an engine that answers every question slowly, for ever,
// must not keep a stopped helper's call waiting for ever.
const maxExcuse = handshakeTimeout

// engineSlow is how long an engine call may take before the engine counts
// as stalled: on two loaded cores a healthy dockerd answered in 0.06–0.2 s.
const engineSlow = time.Second

// engineWatchAfter is how long a silence lasts before the engine is asked
// about it; engineWatchGap separates one question from the next.
const (
	engineWatchAfter = 2 * proto.AliveInterval
	engineWatchGap   = proto.AliveInterval / 2
)

// engineWatch tells the engine's stalls from the helper's silence (see
// above). Its zero value is ready; it asks only while silences are watched.
type engineWatch struct {
	mu      sync.Mutex
	until   time.Time // questions are wanted until then
	running bool

	asked    atomic.Int64 // when the question in flight was asked (unix nanoseconds); 0 if none
	stallEnd atomic.Int64 // when the last stall seen ended
	lost     atomic.Bool  // the last question got no answer or an error: nothing is excused
}

// want keeps the engine asked for the next few seconds.
func (w *engineWatch) want(s *Sandbox) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.until = time.Now().Add(2 * engineWatchAfter)
	if !w.running {
		w.running = true
		w.lost.Store(false) // a silence of its own: an old verdict says nothing of it
		go w.run(s)
	}
}

func (w *engineWatch) run(s *Sandbox) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		w.mu.Lock()
		if time.Now().After(w.until) || s.closed.Load() {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		<-t.C
		w.ask(s, true)
		t.Reset(engineWatchGap)
	}
}

// ask asks the engine about the sandbox, and reports whether the answer
// was slow (a stall, recorded) rather than prompt, missing or an error.
// tracked questions make the silence none while they wait.
func (w *engineWatch) ask(s *Sandbox, tracked bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	asked := time.Now()
	if tracked {
		w.asked.Store(asked.UnixNano())
		defer w.asked.Store(0)
	}
	_, err := s.eng.Inspect(ctx, s.id)
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		w.lost.Store(true)
		return false
	}
	w.lost.Store(false)
	if time.Since(asked) <= engineSlow {
		return false
	}
	w.stallEnd.Store(time.Now().UnixNano())
	return true
}

// from is when a silence that began at last (unix nanoseconds) counts
// from: the end of the engine's last stall if later, or now while a
// question has waited longer than engineSlow; maxExcuse after last at most.
func (w *engineWatch) from(last int64) int64 {
	now := time.Now()
	from := max(last, w.stallEnd.Load())
	if asked := w.asked.Load(); asked != 0 && !w.lost.Load() && now.Sub(time.Unix(0, asked)) > engineSlow {
		from = now.UnixNano()
	}
	return min(from, last+int64(maxExcuse))
}

// silence is how long the helper has been silent since last (unix
// nanoseconds), not counting time the sandbox was paused by this handle
// nor the engine's stalls.
func (s *Sandbox) silence(last int64) time.Duration {
	if s.life.frozen.Load() {
		return 0
	}
	from := max(last, s.life.resumed.Load())
	if time.Since(time.Unix(0, from)) <= engineWatchAfter {
		return time.Since(time.Unix(0, from))
	}
	s.engWatch.want(s)
	return time.Since(time.Unix(0, s.engWatch.from(from)))
}

// watchSilence is the package's watchSilence, with silence measured as
// s.silence does.
func (s *Sandbox) watchSilence(stop <-chan struct{}, last func() int64, limit time.Duration, silent func()) {
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

// excused reports whether the helper's part in a wait of d that just ran
// out is not known: this handle had the sandbox paused, or the engine
// stalled, at some time in the last d. A write blocked that long may be
// the engine's: unless a stall was seen already, the engine is asked once
// (within handshakeTimeout).
func (s *Sandbox) excused(d time.Duration) bool {
	if s.pausedWithin(d) || time.Since(time.Unix(0, s.engWatch.stallEnd.Load())) < d {
		return true
	}
	return s.engWatch.ask(s, false)
}

// silenceErr is err, the helper's silence, or errDaemonSilent when the
// engine's last answer to the watch was missing or an error: then the
// silence is the engine's.
func (s *Sandbox) silenceErr(err error) error {
	if s.engWatch.lost.Load() {
		return errDaemonSilent
	}
	return err
}

// pausedWithin reports whether this handle had the sandbox paused at some
// time in the last d.
func (s *Sandbox) pausedWithin(d time.Duration) bool {
	return s.life.frozen.Load() || time.Since(time.Unix(0, s.life.resumed.Load())) < d
}
