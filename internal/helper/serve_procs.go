package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The serving helper's side of the process table: it forwards each process
// request to PID 1 (pid1_server.go), over its one multiplexed connection
// (pid1_mux.go says what crosses it) or, when that has muxBusy requests in
// flight or cannot be had, over a connection of the request's own.

// forwardProc sends a process request to PID 1 and relays its answer: the
// part of a serving helper. in is a write's input.
func forwardProc(ctx context.Context, req proto.Request, in io.Reader, send func(proto.Kind, []byte) error) *proto.Result {
	var data []byte
	if req.TakesInput() {
		var err error
		if data, err = io.ReadAll(io.LimitReader(in, maxProcInput+1)); err != nil {
			return failure(err)
		}
		if len(data) > maxProcInput {
			return procErr(proto.CodeBadRequest, fmt.Sprintf("a write of more than %d bytes", maxProcInput))
		}
	}
	mc, err := tableConn.get(ctx) // the one multiplexed connection (below)
	if err == nil && mc != nil {
		body, err := json.Marshal(req)
		if err != nil {
			return failure(err)
		}
		if res := mc.do(ctx, req, body, data, send); res != nil {
			return res
		}
	}
	c, err := dialProcs(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return failure(ctx.Err())
		}
		return procErr(proto.CodeProcUnavailable, "the sandbox's process table is unavailable: "+err.Error())
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	body, err := json.Marshal(req)
	if err != nil {
		return failure(err)
	}
	fw := proto.NewWriter(c)
	if err := fw.WriteFrame(proto.KindRequest, 1, body); err != nil {
		return forwardErr(ctx, err)
	}
	if req.TakesInput() {
		if err := fw.WriteFrame(proto.KindInput, 1, data); err != nil {
			return forwardErr(ctx, err)
		}
	}
	fr := proto.NewReader(c)
	for {
		f, err := fr.ReadFrameLimited(func(k proto.Kind, _ uint32) int { return proto.MaxFrom(k, req.Op) })
		if err != nil {
			return forwardErr(ctx, err)
		}
		switch f.Kind {
		case proto.KindStdout:
			if err := send(f.Kind, f.Payload); err != nil {
				return failure(err)
			}
		case proto.KindResult:
			var res proto.Result
			if err := json.Unmarshal(f.Payload, &res); err != nil {
				return failure(err)
			}
			return &res
		default:
			return failure(fmt.Errorf("unexpected frame %q from the process table", f.Kind))
		}
	}
}

func forwardErr(ctx context.Context, err error) *proto.Result {
	if ctx.Err() != nil {
		return failure(ctx.Err())
	}
	return failure(fmt.Errorf("the process table: %w", err))
}

// helperStarted is when this helper process started.
var helperStarted = time.Now()

// procSocketWait is how long after this helper started a dial of PID 1's
// socket is retried while the socket is missing or refuses: PID 1 and the
// library's first helper start together, and a sandbox's first process
// request can come before PID 1 listens (CI saw ENOENT there).
const procSocketWait = 3 * time.Second

// dialProcs dials PID 1's process table, retrying a missing or refusing
// socket during this helper's first procSocketWait, within ctx.
func dialProcs(ctx context.Context) (*net.UnixConn, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", procSocketPath())
		if err == nil {
			return c.(*net.UnixConn), nil
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) || time.Since(helperStarted) > procSocketWait {
			return nil, err
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// announceRequest tells PID 1 that a request of op started or ended
// (announce), unless PID 1 sees it itself: a process request forwarded on
// a multiplexed connection.
func announceRequest(op string) {
	if proto.IsProcOp(op) && tableConn.multiplexed() {
		return
	}
	announce()
}

// multiplexed reports whether the helper has a multiplexed connection. It
// takes no lock (the serve loop calls it; a dial holds pc.mu).
func (pc *tableClient) multiplexed() bool { return pc.up.Load() }

// launched tells PID 1 that the answer of a start of process id was passed
// on; nothing when there is no multiplexed connection or it is being
// dialed (PID 1 then launches after launchFallback).
func (pc *tableClient) launched(id string) {
	if !pc.mu.TryLock() {
		return
	}
	mc := pc.conn
	pc.mu.Unlock()
	if mc == nil || isClosed(mc.done) {
		return
	}
	body, err := json.Marshal(proto.Request{Op: procLaunchOp, Proc: &proto.ProcRequest{ID: id}})
	if err != nil {
		return
	}
	mc.sendMu.Lock()
	defer mc.sendMu.Unlock()
	_ = mc.w.WriteFrame(proto.KindRequest, 0, body)
}

// tableClient is a serving helper's multiplexed connection to PID 1.
type tableClient struct {
	mu   sync.Mutex
	conn *muxConn // nil until dialed, and after it broke
	up   atomic.Bool
}

// muxConn is one multiplexed connection and its requests in flight.
type muxConn struct {
	c      *net.UnixConn
	w      *proto.Writer
	frames *proto.Reader
	sendMu sync.Mutex // a write's Request and Input go out together

	mu    sync.Mutex
	calls map[uint32]*muxCall
	next  uint32
	err   error // set when the connection broke
	done  chan struct{}
}

// muxCall is a request in flight on a muxConn.
type muxCall struct {
	op     string
	frames chan proto.Frame
	gone   chan struct{} // closed when the request stopped waiting
}

// tableConn is this helper's connection to PID 1's table.
var tableConn tableClient

// errMuxRefused: PID 1 closed the connection instead of answering the
// opening request.
var errMuxRefused = errors.New("the process table did not open a multiplexed connection")

// muxDialWait bounds the opening of a multiplexed connection.
const muxDialWait = 5 * time.Second

// get returns the connection, dialing it when needed.
func (pc *tableClient) get(ctx context.Context) (*muxConn, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if mc := pc.conn; mc != nil {
		select {
		case <-mc.done:
		default:
			return mc, nil
		}
	}
	mc, err := dialMux(ctx)
	if err != nil {
		return nil, err
	}
	pc.conn = mc
	pc.up.Store(true)
	go mc.readLoop(func() { pc.up.Store(false) })
	return mc, nil
}

// dialMux dials PID 1 and opens a multiplexed connection.
func dialMux(ctx context.Context) (*muxConn, error) {
	c, err := dialProcs(ctx)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(muxDialWait))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	w := proto.NewWriter(c)
	body, _ := json.Marshal(proto.Request{Op: procMuxOp})
	if err := w.WriteFrame(proto.KindRequest, 1, body); err != nil {
		c.Close()
		return nil, err
	}
	mc := &muxConn{c: c, w: w, calls: map[uint32]*muxCall{}, done: make(chan struct{})}
	fr := proto.NewReader(c)
	f, err := fr.ReadFrameLimited(func(proto.Kind, uint32) int { return 64 })
	if err != nil || f.Kind != proto.KindResult || f.ID != 1 || string(f.Payload) != "{}" {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errMuxRefused
	}
	_ = c.SetDeadline(time.Time{})
	mc.frames = fr
	return mc, nil
}

// readLoop hands PID 1's frames to their requests until the connection
// ends, then calls ended; frames of requests that stopped waiting are
// dropped.
func (mc *muxConn) readLoop(ended func()) {
	var err error
	for {
		var f proto.Frame
		f, err = mc.frames.ReadFrameLimited(func(k proto.Kind, id uint32) int {
			mc.mu.Lock()
			call := mc.calls[id]
			mc.mu.Unlock()
			if call == nil {
				return proto.Discard
			}
			return proto.MaxFrom(k, call.op)
		})
		if err != nil {
			break
		}
		mc.mu.Lock()
		call := mc.calls[f.ID]
		mc.mu.Unlock()
		if call == nil {
			continue
		}
		if f.Kind != proto.KindStdout && f.Kind != proto.KindResult {
			err = fmt.Errorf("unexpected frame %q from the process table", f.Kind)
			break
		}
		select {
		case call.frames <- f:
		case <-call.gone:
		}
	}
	mc.c.Close()
	ended() // before done: a new connection is dialed only after done
	mc.mu.Lock()
	mc.err = err
	close(mc.done)
	mc.mu.Unlock()
}

// do sends req (with a write's data) and relays its output to send until
// its Result.
// It returns nil, having sent nothing, when muxBusy requests are in
// flight: the caller then uses a connection of its own.
func (mc *muxConn) do(ctx context.Context, req proto.Request, body, data []byte, send func(proto.Kind, []byte) error) *proto.Result {
	call := &muxCall{op: req.Op, frames: make(chan proto.Frame, 4), gone: make(chan struct{})}
	mc.mu.Lock()
	if mc.err != nil || isClosed(mc.done) {
		mc.mu.Unlock()
		return forwardErr(ctx, fmt.Errorf("the connection broke: %v", mc.err))
	}
	if len(mc.calls) >= muxBusy {
		mc.mu.Unlock()
		return nil
	}
	mc.next++
	id := mc.next
	mc.calls[id] = call
	mc.mu.Unlock()
	defer func() {
		mc.mu.Lock()
		delete(mc.calls, id)
		mc.mu.Unlock()
		close(call.gone)
	}()
	mc.sendMu.Lock()
	err := mc.w.WriteFrame(proto.KindRequest, id, body)
	if err == nil && req.TakesInput() {
		err = mc.w.WriteFrame(proto.KindInput, id, data)
	}
	mc.sendMu.Unlock()
	if err != nil {
		mc.c.Close()
		return forwardErr(ctx, err)
	}
	for {
		select {
		case f := <-call.frames:
			if f.Kind == proto.KindStdout {
				if err := send(f.Kind, f.Payload); err != nil {
					return failure(err)
				}
				continue
			}
			var res proto.Result
			if err := json.Unmarshal(f.Payload, &res); err != nil {
				return failure(err)
			}
			return &res
		case <-mc.done:
			if len(call.frames) > 0 {
				continue // frames that came before the end
			}
			return forwardErr(ctx, fmt.Errorf("the connection broke: %v", mc.err))
		case <-ctx.Done():
			go func() { _ = mc.w.WriteFrame(proto.KindCancel, id, nil) }()
			return failure(ctx.Err())
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
