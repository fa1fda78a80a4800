package helper

import (
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// A serving helper keeps one connection to PID 1's process table and
// multiplexes its process requests over it, by request ID, instead of
// dialing for each (a dial, an accept, a peer check and a goroutine on
// each side per request). The connection starts with a Request of
// procMuxOp, which PID 1 answers with an empty Result (PID 1 and the
// serving helper are the same binary, so PID 1 always can). A request
// that finds no such connection (it broke, or muxBusy requests are in
// flight) takes a connection of its own. On the connection:
//
//	helper → PID 1: Request (a write's one Input frame right after it),
//	  Cancel (the request's context ended).
//	PID 1 → helper: output frames, then the Result, by request ID.
//
// PID 1 serves at most maxMuxRequests requests of one connection at a
// time and stops reading it meanwhile: a client that sends without
// reading its answers costs PID 1 a bounded number of goroutines.

// Activity: PID 1 counts the requests of multiplexed connections itself
// (muxActivity, for its idle timeout), so a serving helper does not
// announce them with signals when it has such a connection; it still
// announces every heartbeat while they run.
var (
	muxRunning atomic.Int64 // requests being served
	muxSeen    atomic.Bool  // a request came since the last look
)

// muxActivity reports whether a request of a multiplexed connection ran
// since the last call.
func muxActivity() bool { return muxSeen.Swap(false) || muxRunning.Load() > 0 }

// procMuxOp opens a multiplexed connection (internal to the helper: the
// library never sends it).
const procMuxOp = "proc_mux"

// A start's launch waits until the serving helper has passed the answer
// on: the command would otherwise start on the CPU that the answer needs
// on its way out of the container (on 2 CPUs, a start answered 0.5 ms
// sooner for a launch ~0.2 ms later). The helper says so with a Request
// of procLaunchOp (ID 0, the process's ID in Proc, no answer); without
// it (the helper died, the connection broke) PID 1 launches after
// launchFallback.
const procLaunchOp = "proc_launch"

// launchFallback is how long after its answer a start is launched when the
// serving helper does not say it passed the answer on.
var launchFallback = 20 * time.Millisecond

// pendingLaunch is the launch of an answered start that waits.
type pendingLaunch struct {
	once   sync.Once
	launch func()
	begun  atomic.Bool // the serving helper's word started it
}

// deferLaunch runs launch when the serving helper says that it passed the
// answer of process id on (wordLaunch), when the process is signalled
// (launchPending), or after launchFallback, whichever comes first.
func (t *procTable) deferLaunch(id string, launch func()) {
	pl := &pendingLaunch{launch: launch}
	t.mu.Lock()
	t.launches[id] = pl
	t.mu.Unlock()
	time.AfterFunc(launchFallback, func() { t.runLaunch(id, pl) })
}

// runLaunch runs pl once, then forgets it; a second caller waits for the
// first.
func (t *procTable) runLaunch(id string, pl *pendingLaunch) {
	pl.once.Do(func() {
		pl.launch()
		t.mu.Lock()
		delete(t.launches, id)
		t.mu.Unlock()
	})
}

// waitingLaunch returns the launch of process id that waits, or nil.
func (t *procTable) waitingLaunch(id string) *pendingLaunch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.launches[id]
}

// launchPending launches process id if its launch waits (deferLaunch),
// and returns once the launcher has the command (or failed to take it).
func (t *procTable) launchPending(id string) {
	if pl := t.waitingLaunch(id); pl != nil {
		t.runLaunch(id, pl)
	}
}

// wordLaunch starts the launch of process id in the background, if it
// waits and no word started it yet: a client repeating the word costs
// nothing more.
func (t *procTable) wordLaunch(id string) {
	if pl := t.waitingLaunch(id); pl != nil && pl.begun.CompareAndSwap(false, true) {
		go t.runLaunch(id, pl)
	}
}

// maxMuxRequests bounds the requests PID 1 serves at once on one
// multiplexed connection.
const maxMuxRequests = 256

// muxBusy is how many requests a serving helper keeps in flight on its
// multiplexed connection at most; more (many waits at once, each up to
// proto.MaxProcWait) take a connection of their own each, as before: the
// helper never reaches PID 1's bound, so a request never waits behind
// others.
const muxBusy = maxMuxRequests / 2

// serveMux serves a multiplexed connection whose opening request was read.
func (t *procTable) serveMux(c *net.UnixConn, fr *proto.Reader, fw *proto.Writer) {
	ctx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	if fw.WriteFrame(proto.KindResult, 1, []byte("{}")) != nil {
		return
	}
	var mu sync.Mutex
	running := map[uint32]context.CancelFunc{}
	slots := make(chan struct{}, maxMuxRequests)
	limit := func(k proto.Kind, _ uint32) int {
		switch k {
		case proto.KindRequest:
			return proto.MaxPayload
		case proto.KindInput:
			return maxProcInput
		}
		return 0
	}
	for {
		f, err := fr.ReadFrameLimited(limit)
		if err != nil {
			return
		}
		switch f.Kind {
		case proto.KindCancel:
			mu.Lock()
			if cancel := running[f.ID]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		case proto.KindRequest:
		default:
			return // the protocol is broken: the connection ends
		}
		var req proto.Request
		if err := json.Unmarshal(f.Payload, &req); err != nil || req.Proc == nil {
			return
		}
		if req.Op == procLaunchOp {
			t.wordLaunch(req.Proc.ID)
			continue
		}
		var in []byte
		if req.TakesInput() {
			g, err := fr.ReadFrameLimited(limit)
			if err != nil || g.Kind != proto.KindInput || g.ID != f.ID {
				return
			}
			in = g.Payload
		}
		mu.Lock()
		_, dup := running[f.ID]
		mu.Unlock()
		if dup {
			return
		}
		if quick(req) {
			// Answered in the read loop: no goroutine to wake, and nothing
			// that waits (an answer that does not fit the socket stalls only
			// this connection, whose client does not read).
			muxSeen.Store(true)
			if !t.answerMux(ctx, c, fw, f.ID, req, in) {
				return
			}
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		rctx, cancel := context.WithCancel(ctx)
		mu.Lock()
		running[f.ID] = cancel
		mu.Unlock()
		muxRunning.Add(1)
		muxSeen.Store(true)
		go func(id uint32) {
			defer func() {
				muxSeen.Store(true)
				muxRunning.Add(-1)
				<-slots
			}()
			t.answerMux(rctx, c, fw, id, req, in)
			mu.Lock()
			delete(running, id)
			mu.Unlock()
			cancel()
		}(f.ID)
	}
}

// quick reports whether req is answered at once, never waiting on
// anything but the kernel: an info, a list, a signal, a resize, a read
// that does not wait for output, or a start (its launch follows later,
// see deferLaunch; it forks a launcher when none is ready).
func quick(req proto.Request) bool {
	switch req.Op {
	case proto.OpProcInfo, proto.OpProcList, proto.OpProcSignal, proto.OpProcResize, proto.OpProcStart:
		return true
	case proto.OpProcRead:
		return req.Proc.WaitMs <= 0
	}
	return false
}

// answerMux runs req and writes its output and Result as id on a
// multiplexed connection; false (the connection closed) when the writing
// failed. A start's launch follows its answer (deferLaunch).
func (t *procTable) answerMux(ctx context.Context, c *net.UnixConn, fw *proto.Writer, id uint32, req proto.Request, in []byte) bool {
	held := &heldOutput{w: fw, id: id}
	res, then := t.handle(ctx, req, in, held.send)
	ok := held.result(encodeResult(req.Op, res)) == nil
	if !ok {
		c.Close() // the reader ends too
	}
	switch {
	case then == nil:
	case ok && res.Proc != nil:
		t.deferLaunch(res.Proc.Info.ID, then)
	default:
		go then()
	}
	return ok
}
