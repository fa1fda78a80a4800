package sandbox

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
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
// its cheapest question (Docker's _ping; Inspect on an engine without one),
// one at a time; a question that waits longer than engineSlow is a stall,
// from when it was asked until it is answered, and the time of the stalls
// within a silence is taken off it. A question unanswered within
// handshakeTimeout, or an error, is no stall: the engine is unreachable,
// not slow. Stalls excuse at most maxExcuse of one silence.

// engineSlow is how long a question may wait before the engine counts as
// stalled: on two loaded cores a healthy dockerd answered a ping in
// 0.06-0.2 s, and Inspects, which wait on a container's lock, took over 1 s.
const engineSlow = 2 * time.Second

// maxExcuse is the most of one silence (or one blocked write) the engine's
// stalls excuse: an engine that stalls again and again must not keep a
// stopped helper's call waiting for ever.
const maxExcuse = handshakeTimeout

// engineWatchAfter is how long a silence lasts before the engine is asked
// about it; engineWatchGap separates one question from the next.
const (
	engineWatchAfter = 2 * proto.AliveInterval
	engineWatchGap   = proto.AliveInterval / 2
)

// pinger is an engine with a question cheaper than Inspect, which takes no
// lock of a sandbox (internal/docker's Ping).
type pinger interface {
	Ping(ctx context.Context) error
}

// engineWatch tells the engine's stalls from the helper's silence (see
// above). Its zero value is ready; it asks only while silences are watched.
type engineWatch struct {
	mu      sync.Mutex
	until   time.Time // questions are wanted until then
	running bool
	stalls  [8][2]int64 // the last stalls seen, [asked, answered] (unix nanoseconds), a ring
	next    int
	asked   int64 // when the watch's question in flight was asked; 0 if none
	lost    bool  // the last question got no answer or an error: nothing in flight is excused
}

// want keeps the engine asked for the next few seconds.
func (w *engineWatch) want(s *Sandbox) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.until = time.Now().Add(2 * engineWatchAfter)
	if !w.running {
		w.running = true
		w.lost = false // a silence of its own: an old verdict says nothing of it
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

// ask asks the engine its question, records a stall, and reports whether
// there was one. A tracked question counts as a stall while it waits.
func (w *engineWatch) ask(s *Sandbox, tracked bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	asked := time.Now().UnixNano()
	if tracked {
		w.mu.Lock()
		w.asked = asked
		w.mu.Unlock()
	}
	var err error
	if p, ok := s.eng.(pinger); ok {
		err = p.Ping(ctx)
	} else {
		_, err = s.eng.Inspect(ctx, s.id)
	}
	answered := time.Now().UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	if tracked {
		w.asked = 0
	}
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		w.lost = true
		return false
	}
	w.lost = false
	if time.Duration(answered-asked) <= engineSlow {
		return false
	}
	w.stalls[w.next] = [2]int64{asked, answered}
	w.next = (w.next + 1) % len(w.stalls)
	return true
}

// excuse is how much of the time from last to now (unix nanoseconds) the
// engine was stalled: the stalls seen and the question in flight, once it
// has waited longer than engineSlow; at most maxExcuse.
func (w *engineWatch) excuse(last, now int64) time.Duration {
	w.mu.Lock()
	spans := make([][2]int64, 0, len(w.stalls)+1)
	for _, st := range w.stalls {
		if st[1] > last && st[0] < now {
			spans = append(spans, [2]int64{max(st[0], last), min(st[1], now)})
		}
	}
	if w.asked != 0 && !w.lost && time.Duration(now-w.asked) > engineSlow && w.asked < now {
		spans = append(spans, [2]int64{max(w.asked, last), now})
	}
	w.mu.Unlock()
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total, end int64 // the union's length, and its end so far
	for _, sp := range spans {
		if sp[0] < end {
			sp[0] = end
		}
		if sp[1] > sp[0] {
			total += sp[1] - sp[0]
			end = sp[1]
		}
	}
	return min(time.Duration(total), maxExcuse)
}

// unreachable reports whether the engine's last answer was missing or an
// error.
func (w *engineWatch) unreachable() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// silence is how long the helper has been silent since last (unix
// nanoseconds), not counting time the sandbox was paused by this handle
// nor the engine's stalls.
func (s *Sandbox) silence(last int64) time.Duration {
	if s.life.frozen.Load() {
		return 0
	}
	from, now := max(last, s.life.resumed.Load()), time.Now().UnixNano()
	quiet := time.Duration(now - from)
	if quiet <= engineWatchAfter {
		return quiet
	}
	s.engWatch.want(s)
	return quiet - s.engWatch.excuse(from, now)
}

// watchSilence is the package's watchSilence, with the silence since
// last() (unix nanoseconds; 0 while nothing is awaited) measured as
// s.silence does.
func (s *Sandbox) watchSilence(stop <-chan struct{}, last func() int64, limit time.Duration, silent func()) {
	watchSilence(stop, func() time.Duration {
		if since := last(); since != 0 {
			return s.silence(since)
		}
		return 0
	}, limit, silent)
}

// excused reports whether a wait of d that just ran out may be the
// engine's: this handle had the sandbox paused, or the engine stalled, at
// some time in the last d. A write blocked that long waits on the engine
// too: unless a stall was seen already, the engine is asked once (within
// handshakeTimeout).
func (s *Sandbox) excused(d time.Duration) bool {
	now := time.Now()
	if s.pausedWithin(d) || s.engWatch.excuse(now.Add(-d).UnixNano(), now.UnixNano()) > 0 {
		return true
	}
	return s.engWatch.ask(s, false)
}

// silenceErr is err, the helper's silence, or errDaemonSilent when the
// engine's last answer to the watch was missing or an error: then the
// silence is the engine's.
func (s *Sandbox) silenceErr(err error) error {
	if s.engWatch.unreachable() {
		return errDaemonSilent
	}
	return err
}

// pausedWithin reports whether this handle had the sandbox paused at some
// time in the last d.
func (s *Sandbox) pausedWithin(d time.Duration) bool {
	return s.life.frozen.Load() || time.Since(time.Unix(0, s.life.resumed.Load())) < d
}

// boundByEngine calls cancel once d has passed, not counting the engine's
// stalls in it (at most maxExcuse of them; none once the engine was found
// unreachable), and returns a func that stops the bound. It bounds work
// done through the engine that must not be given up because the engine
// was slow: the kill of a lost helper's commands (given up in a daemon
// stalled 12-18 s, it left them running).
func (s *Sandbox) boundByEngine(cancel func(), d time.Duration) (stop func()) {
	done := make(chan struct{})
	start := time.Now().UnixNano()
	go func() {
		t := time.NewTicker(engineWatchGap)
		defer t.Stop()
		for {
			s.engWatch.want(s) // asked from the start: a question counts once it waited engineSlow
			select {
			case <-done:
				return
			case <-t.C:
			}
			now := time.Now().UnixNano()
			spent := time.Duration(now - start)
			if spent < d {
				continue
			}
			if spent >= d+maxExcuse || s.engWatch.unreachable() || spent-s.engWatch.excuse(start, now) >= d {
				cancel()
				return
			}
		}
	}()
	return func() { close(done) }
}
