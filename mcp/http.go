package sandboxmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionIDHeader is the streamable HTTP transport's session header.
const sessionIDHeader = "Mcp-Session-Id"

// ErrHandlerClosed is the error of a tool call that arrives after
// HTTPHandler.Close.
var ErrHandlerClosed = errors.New("sandboxmcp: server is shutting down")

// errSessionEnded is the error of a tool call in a session that has ended.
var errSessionEnded = errors.New("sandboxmcp: the MCP session has ended")

// HTTPHandler serves the tools over MCP's streamable HTTP transport, with
// one sandbox per MCP session:
//
//   - A session gets its sandbox on its first tool call (tools/list and
//     other requests create none). Concurrent first calls share one
//     creation; a failed creation is reported as a tool error and tried
//     again on the next call.
//   - The sandbox is removed when the session ends: the client deletes the
//     session (HTTP DELETE; the sandbox goes first, so calls in flight end
//     at once), the client sends nothing (no POST) for Config.IdleTimeout
//     (the SDK's session timeout, paused while a POST is in progress), or
//     the handler is closed. The log says which (reason="client ended the
//     session", reason="idle timeout (...)", reason=shutdown).
//   - At most Config.MaxSessions sessions are open at once; a request that
//     would open another is answered HTTP 503 with a JSON-RPC error.
//
// Close removes every sandbox and ends every session; call it before
// shutting the HTTP server down, since the SDK keeps a session's event
// stream (a long GET) open until the session ends.
type HTTPHandler struct {
	cfg    Config
	log    *slog.Logger
	server *mcp.Server
	sdk    *mcp.StreamableHTTPHandler

	ctx    context.Context // parent of sandbox creations; ends with Close
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session // by MCP session ID
	opening  int                 // requests that may open a session, being served
}

// session is the sandbox of one MCP session.
type session struct {
	id     string
	ctx    context.Context // ends with the session: aborts a creation
	cancel context.CancelFunc

	inFlight   atomic.Int32 // requests of the session being served
	lastActive atomic.Int64 // when one was last started or ended, in Unix nanoseconds

	mu    sync.Mutex // held while the sandbox is created
	ended bool
	sb    *sandbox.Sandbox
	tools []tools.Tool
}

// NewHTTPHandler returns a handler for the streamable HTTP transport,
// to mount at the MCP endpoint (e.g. /mcp). It binds nothing itself. The
// SDK's protection against DNS rebinding is on: a request that arrives on
// a loopback address with a Host header that is not a loopback one is
// refused.
func NewHTTPHandler(cfg Config) *HTTPHandler {
	h := &HTTPHandler{
		cfg:      cfg,
		log:      cfg.logger(),
		server:   newServer(&cfg),
		sessions: map[string]*session{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	// The tools' names, descriptions and schemas do not depend on the
	// sandbox; calls are routed to the session's own tool set.
	for _, t := range append(tools.New(describeOnly{wd: cfg.workingDir()}, cfg.Tools), execToolSet(describeExec{wd: cfg.workingDir()}, &cfg)...) {
		name := t.Name
		h.server.AddTool(mcpTool(t, cfg.networked()), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return h.call(ctx, req, name), nil
		})
	}
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			return nil // the SDK answers 400 to a new session
		}
		return h.server
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout: cfg.idleTimeout(),
		Logger:         cfg.SDKLogger,
	})
	return h
}

// Server returns the MCP server shared by every session (to add more
// tools, prompts or middleware).
func (h *HTTPHandler) Server() *mcp.Server { return h.server }

// Reasons logged when a session's sandbox is removed.
const (
	reasonDeleted  = "client ended the session"
	reasonShutdown = "shutdown"
	reasonClosed   = "session closed"
)

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionIDHeader)
	switch {
	case r.Method == http.MethodDelete && id != "":
		// The SDK closes the session, which waits for the calls in flight;
		// removing the sandbox first makes them end now. Only IDs of live
		// sessions are in the map, so a made-up ID does nothing here.
		h.endSession(id, h.deleteReason(id))
	case r.Method == http.MethodPost && id == "":
		// A request without a session opens one (an initialize).
		done, ok := h.admit()
		if !ok {
			h.refuse(w)
			return
		}
		defer done()
		w = &admittedWriter{ResponseWriter: w, done: done}
	case r.Method == http.MethodPost:
		// As the SDK's idle timer, only POSTs count as activity (a GET
		// is the event stream, open all along).
		if s := h.lookup(id); s != nil {
			s.touch(1)
			defer s.touch(-1)
		}
	}
	h.sdk.ServeHTTP(w, r)
}

// admit reserves room for a new session under Config.MaxSessions: it
// counts the open sessions and the requests that may open one, so that
// concurrent openings cannot pass the cap together. done releases the
// reservation (once; later calls do nothing); call it when the request's
// session, if any, is counted among the open ones: when the response
// starts (admittedWriter), or at the latest when the request is served.
func (h *HTTPHandler) admit() (done func(), ok bool) {
	limit := h.cfg.maxSessions()
	h.mu.Lock()
	defer h.mu.Unlock()
	if limit > 0 {
		open := h.opening
		for range h.server.Sessions() {
			open++
		}
		if open >= limit {
			return nil, false
		}
	}
	h.opening++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			h.opening--
			h.mu.Unlock()
		})
	}, true
}

// admittedWriter releases a session's reservation when the response
// starts: the SDK has registered the session by then, and the client may
// open the next one as soon as it reads the answer, before the handler
// returns.
type admittedWriter struct {
	http.ResponseWriter
	done func()
}

func (w *admittedWriter) WriteHeader(code int) {
	w.done()
	w.ResponseWriter.WriteHeader(code)
}

func (w *admittedWriter) Write(p []byte) (int, error) {
	w.done()
	return w.ResponseWriter.Write(p)
}

// Flush lets the SDK stream events through the wrapper.
func (w *admittedWriter) Flush() {
	w.done()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *admittedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuse answers a request that would open a session past the cap: HTTP
// 503 (with Retry-After), and a JSON-RPC error for clients that read it.
func (h *HTTPHandler) refuse(w http.ResponseWriter) {
	limit := h.cfg.maxSessions()
	msg := fmt.Sprintf("sandboxmcp: too many MCP sessions: this server serves at most %d at once (each may hold a sandbox); "+
		"end one (HTTP DELETE) or wait until an idle one expires, then retry", limit)
	h.log.Warn("refused a new session: too many sessions", "max_sessions", limit)
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": -32000, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "10")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(body)
}

// lookup returns the session with a sandbox (or one being created) of
// that ID, or nil.
func (h *HTTPHandler) lookup(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}

// touch records a request of the session starting (+1) or ending (-1).
func (s *session) touch(delta int32) {
	s.inFlight.Add(delta)
	s.lastActive.Store(time.Now().UnixNano())
}

// deleteReason says why a session a client DELETEs ends: the idle timeout
// when the session was idle that long, since the SDK's timer closed it then
// and the client's DELETE answers the end of its event stream (it may come
// before the goroutine waiting for the end logs it); else reasonDeleted.
func (h *HTTPHandler) deleteReason(id string) string {
	idle := h.cfg.idleTimeout()
	if s := h.lookup(id); s != nil && idle > 0 && s.inFlight.Load() == 0 &&
		time.Since(time.Unix(0, s.lastActive.Load())) >= idle-deleteSlack {
		return fmt.Sprintf("idle timeout (no request for %v)", idle)
	}
	return reasonDeleted
}

// deleteSlack is how much earlier than the idle timeout the SDK's timer may
// fire, as read by deleteReason: the timer restarts when a request ends, a
// moment before touch records it.
const deleteSlack = 100 * time.Millisecond

// endReason says why the SDK closed the session, which this handler did
// not do (a DELETE and Close remove the session from the map first): the
// idle timeout when the session was idle that long (the SDK's timer
// restarts as a request ends, a moment before touch records it), else
// reasonClosed.
func (s *session) endReason(idle time.Duration) string {
	quiet := time.Since(time.Unix(0, s.lastActive.Load()))
	if idle > 0 && s.inFlight.Load() == 0 && quiet >= idle-min(idle/2, time.Second) {
		return fmt.Sprintf("idle timeout (no request for %v)", idle)
	}
	return reasonClosed
}

// Sandboxes returns the IDs of the sandboxes that exist, by MCP session ID.
func (h *HTTPHandler) Sandboxes() map[string]string {
	h.mu.Lock()
	all := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	out := map[string]string{}
	for _, s := range all {
		s.mu.Lock()
		if s.sb != nil && !s.ended {
			out[s.id] = s.sb.ID()
		}
		s.mu.Unlock()
	}
	return out
}

// call runs tool name in the sandbox of the request's session.
func (h *HTTPHandler) call(ctx context.Context, req *mcp.CallToolRequest, name string) *mcp.CallToolResult {
	s, err := h.session(req.Session)
	if err != nil {
		return errorResult(err)
	}
	ts, wd, err := s.toolSet(ctx, h)
	if err != nil {
		return errorResult(err)
	}
	t, ok := tools.Lookup(ts, name)
	if !ok {
		return errorResult(fmt.Errorf("unknown tool %q", name))
	}
	args := arguments(req)
	return callToolResult(t.Call(callContext(ctx, req), args), args, wd)
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: " + err.Error()}}}
}

// session returns the bookkeeping of ss, made on its first tool call, when
// a goroutine starts to wait for its end.
func (h *HTTPHandler) session(ss *mcp.ServerSession) (*session, error) {
	if ss == nil || ss.ID() == "" {
		return nil, errors.New("sandboxmcp: this request has no MCP session")
	}
	id := ss.ID()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrHandlerClosed
	}
	if s := h.sessions[id]; s != nil {
		return s, nil
	}
	s := &session{id: id}
	s.lastActive.Store(time.Now().UnixNano())
	s.ctx, s.cancel = context.WithCancel(h.ctx)
	h.sessions[id] = s
	go func() {
		// Wait returns once the session is closed: by a DELETE, by the
		// SDK's idle timer, by Close, or when its connection breaks.
		_ = ss.Wait()
		h.endSession(id, s.endReason(h.cfg.idleTimeout()))
	}()
	return s, nil
}

// toolSet returns the tools bound to the session's sandbox, creating the
// sandbox on first use. The creation ends early if ctx or the session
// ends.
func (s *session) toolSet(ctx context.Context, h *HTTPHandler) ([]tools.Tool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, "", errSessionEnded
	}
	if s.sb != nil {
		return s.tools, s.sb.WorkingDir(), nil
	}
	cctx, stop := context.WithCancel(s.ctx)
	defer stop()
	defer context.AfterFunc(ctx, stop)()
	start := time.Now()
	sb, err := NewSandbox(cctx, h.cfg)
	if err != nil {
		h.log.Error("creating sandbox", "session", s.id, "error", err)
		if s.ctx.Err() != nil {
			return nil, "", errSessionEnded
		}
		return nil, "", fmt.Errorf("creating the sandbox: %w", err)
	}
	s.sb = sb
	s.tools = append(tools.New(sb, h.cfg.Tools), execToolSet(sb, &h.cfg)...)
	h.log.Info("sandbox created", "session", s.id, "sandbox", sb.ID(), "image", imageName(&h.cfg),
		"took", time.Since(start).Round(time.Millisecond))
	return s.tools, sb.WorkingDir(), nil
}

// endSession removes the session's sandbox, if it has one; it is
// idempotent.
func (h *HTTPHandler) endSession(id, reason string) {
	h.mu.Lock()
	s := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if s != nil {
		s.end(h.log, reason)
	}
}

// end aborts a creation in progress, then removes the sandbox.
func (s *session) end(log *slog.Logger, reason string) error {
	s.cancel()
	s.mu.Lock()
	s.ended = true
	sb := s.sb
	s.mu.Unlock()
	if sb == nil {
		return nil
	}
	if err := closeSandbox(sb); err != nil {
		log.Error("removing sandbox", "session", s.id, "sandbox", sb.ID(), "reason", reason, "error", err)
		return err
	}
	log.Info("sandbox removed", "session", s.id, "sandbox", sb.ID(), "reason", reason)
	return nil
}

// Close removes every sandbox (aborting creations in progress), then
// closes every MCP session, waiting a few seconds at most for their calls
// in flight to return. New sessions are refused from then on. It returns
// the errors of the removals.
func (h *HTTPHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	all := make([]*session, 0, len(h.sessions))
	for id, s := range h.sessions {
		all = append(all, s)
		delete(h.sessions, id)
	}
	h.mu.Unlock()
	h.cancel()

	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() { errs[i] = s.end(h.log, reasonShutdown) })
	}
	wg.Wait()

	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for ss := range h.server.Sessions() {
			wg.Go(func() { ss.Close() })
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(sessionCloseTimeout):
		h.log.Warn("MCP sessions did not close in time")
	}
	return errors.Join(errs...)
}
