package sandbox

// What a sandbox uses (Usage), and what was done in it: an audit record
// and a span of each call (WithAudit, WithTracerProvider).

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Redact decides what an audit record or a span says of a command, a
// path or an address (Dial's): it gets the kind ("command", "path",
// "address") and the text, and returns what to record; "" leaves the
// attribute out. It is called on the caller's goroutine, once per
// attribute. See WithRedact.
type Redact func(kind, text string) string

// RedactCommands is the default Redact: it leaves commands out (they can
// hold secrets: a token on a curl line) and keeps paths.
func RedactCommands(kind, text string) string {
	if kind == "command" {
		return ""
	}
	return text
}

// tracerName names the library's tracer (its instrumentation scope).
const tracerName = "github.com/dockersandbox/sandbox"

// observer reports a sandbox's calls: an audit record through its
// handler (WithAudit), a span through its tracer (WithTracerProvider;
// default the global provider, otel.GetTracerProvider).
type observer struct {
	audit  *slog.Logger // nil: no audit
	tracer trace.Tracer
	redact Redact
}

// newObserver returns the observer the options ask for.
func (o *options) newObserver() *observer {
	ob := &observer{redact: o.redact}
	if o.audit != nil {
		ob.audit = slog.New(o.audit)
	}
	tp := o.tracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	ob.tracer = tp.Tracer(tracerName)
	if ob.redact == nil {
		ob.redact = RedactCommands
	}
	return ob
}

// op is one public call being observed: its span and its audit record's
// fields. A nil op (nothing records) does nothing.
type op struct {
	ob      *observer
	name    string
	names   *opName
	sandbox string
	t0      time.Time
	span    trace.Span
	attrs   []attribute.KeyValue  // the span's and the record's, past the common ones
	buf     [6]attribute.KeyValue // attrs' first array: no allocation for a call's few
}

// begin starts observing the call name (a method's name: "Execute",
// "Write") on the sandbox s. It returns ctx with the call's span, and
// the op, nil when neither a span nor an audit record is recorded.
func (s *Sandbox) begin(ctx context.Context, name string) (context.Context, *op) {
	return s.obs.begin(ctx, name, s.ID())
}

// beginDetached is begin for a call without a context (Close,
// SetEgress): its span is a root, linked to the span of the call that
// made the handle (New, Attach).
func (s *Sandbox) beginDetached(name string) *op {
	if s.obs == nil {
		return nil
	}
	_, p := s.obs.begin(context.Background(), name, s.ID(), clientSpan, trace.WithLinks(trace.Link{SpanContext: s.made}))
	return p
}

// clientSpan is the kind of the library's spans (a call to the sandbox).
var clientSpan = trace.WithSpanKind(trace.SpanKindClient)

// clientSpanOnly is the start options of a span with no link, made once:
// not one slice per call.
var clientSpanOnly = []trace.SpanStartOption{clientSpan}

func (ob *observer) begin(ctx context.Context, name, id string, opts ...trace.SpanStartOption) (context.Context, *op) {
	if ob == nil {
		return ctx, nil
	}
	if len(opts) == 0 {
		opts = clientSpanOnly
	}
	names := namesOf(name)
	ctx, span := ob.tracer.Start(ctx, names.span, opts...)
	if ob.audit == nil && !span.IsRecording() {
		return ctx, nil
	}
	p := &op{ob: ob, name: name, names: names, sandbox: id, t0: time.Now(), span: span}
	p.attrs = p.buf[:0]
	return ctx, p
}

// text adds a command or a path, as the Redact allows.
func (p *op) text(kind, text string) {
	if p == nil {
		return
	}
	if t := p.ob.redact(kind, text); t != "" {
		p.attrs = append(p.attrs, attribute.String(textKey(kind), t))
	}
}

// textKey is the attribute key of a text's kind, a constant for the
// library's kinds (no string to make per call).
func textKey(kind string) string {
	switch kind {
	case "command":
		return "sandbox.command"
	case "path":
		return "sandbox.path"
	case "address":
		return "sandbox.address"
	}
	return "sandbox." + kind
}

// command adds the command, as the Redact allows.
func (p *op) command(c string) { p.text("command", c) }

// path adds a path, as the Redact allows.
func (p *op) path(path string) { p.text("path", path) }

// bytes adds the bytes the call moved (written, read, transferred).
func (p *op) bytes(n int64) { p.int("sandbox.bytes", n) }

// exit adds a command's exit code.
func (p *op) exit(code int) { p.int("sandbox.exit_code", int64(code)) }

func (p *op) int(key string, v int64) {
	if p == nil {
		return
	}
	p.attrs = append(p.attrs, attribute.Int64(key, v))
}

// str adds a string that needs no Redact (an ID the library made).
func (p *op) str(key, v string) {
	if p == nil {
		return
	}
	p.attrs = append(p.attrs, attribute.String(key, v))
}

// setSandbox names the sandbox (New and Attach learn it at the end).
func (p *op) setSandbox(id string) {
	if p != nil {
		p.sandbox = id
	}
}

// end ends the call with the error *errp points to (nil: a success).
func (p *op) end(errp *error) {
	if p == nil {
		return
	}
	var err error
	if errp != nil {
		err = *errp
	}
	if _, ok := errors.AsType[*ExitError](err); ok {
		err = nil // the command ran: its exit code says how it ended
	}
	var msg string // err's text, made once for the span and the record
	if err != nil {
		msg = err.Error()
	}
	d := time.Since(p.t0)
	if p.span.IsRecording() {
		// The common attributes go after the call's, in the same array.
		all := append(p.attrs, attribute.String("sandbox.id", p.sandbox), attribute.String("sandbox.operation", p.name))
		p.span.SetAttributes(all...)
		if err != nil {
			p.span.RecordError(err)
			p.span.SetStatus(codes.Error, msg)
		}
	}
	p.span.End()
	if p.ob.audit == nil {
		return
	}
	ctx := recordContext(p.span)
	level, outcome := slog.LevelInfo, "ok"
	if err != nil {
		level, outcome = slog.LevelWarn, "error"
	}
	if !p.ob.audit.Enabled(ctx, level) {
		return
	}
	var buf [12]slog.Attr // on the stack for a call's few attributes
	attrs := append(buf[:0], slog.String("op", p.name), slog.String("sandbox", p.sandbox), slog.String("outcome", outcome))
	if err != nil {
		attrs = append(attrs, slog.String("error", msg))
	}
	for _, a := range p.attrs {
		k := strings.TrimPrefix(string(a.Key), "sandbox.")
		if a.Value.Type() == attribute.INT64 {
			attrs = append(attrs, slog.Int64(k, a.Value.AsInt64()))
		} else {
			attrs = append(attrs, slog.String(k, a.Value.Emit()))
		}
	}
	attrs = append(attrs, slog.Duration("duration", d))
	p.ob.audit.LogAttrs(ctx, level, p.names.msg, attrs...)
}

// recordContext is the context of an audit record: span's, for handlers
// that log its trace, or none when span has no valid trace (no context
// to allocate).
func recordContext(span trace.Span) context.Context {
	if !span.SpanContext().IsValid() {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), span)
}

// opName is the span name and the record message of a call.
type opName struct{ span, msg string }

// opNames maps a call's name to its opName, a copy-on-write map so that
// a call looks its names up without a lock or an allocation; opNamesMu
// serializes the additions, one per name.
var (
	opNames   atomic.Pointer[map[string]*opName]
	opNamesMu sync.Mutex
)

// namesOf returns the names of the call name, made on its first call.
func namesOf(name string) *opName {
	if m := opNames.Load(); m != nil {
		if n := (*m)[name]; n != nil {
			return n
		}
	}
	opNamesMu.Lock()
	defer opNamesMu.Unlock()
	old := opNames.Load()
	if old != nil {
		if n := (*old)[name]; n != nil {
			return n
		}
	}
	m := make(map[string]*opName, 64)
	if old != nil {
		maps.Copy(m, *old)
	}
	n := &opName{span: "sandbox." + name, msg: "sandbox " + name}
	m[name] = n
	opNames.Store(&m)
	return n
}

// egress records a decision of the sandbox's egress policy through the
// audit handler, if any: the message "sandbox egress" and the attributes
// op ("egress"), sandbox, outcome ("allowed" or "denied"), method, host,
// port, rule, reason, sent, received, start (when the request came) and
// duration; a denied one at slog.LevelWarn, another at slog.LevelInfo.
func (ob *observer) egress(id string, ev EgressEvent) {
	if ob == nil || ob.audit == nil {
		return
	}
	level, outcome := slog.LevelInfo, "allowed"
	if !ev.Allowed {
		level, outcome = slog.LevelWarn, "denied"
	}
	ctx := context.Background()
	if !ob.audit.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("op", "egress"), slog.String("sandbox", id), slog.String("outcome", outcome),
		slog.String("method", ev.Method), slog.String("host", ev.Host), slog.Int("port", ev.Port)}
	if ev.Rule != "" {
		attrs = append(attrs, slog.String("rule", ev.Rule))
	}
	if ev.Reason != "" {
		attrs = append(attrs, slog.String("reason", ev.Reason))
	}
	attrs = append(attrs, slog.Int64("sent", ev.Sent), slog.Int64("received", ev.Received),
		slog.Time("start", ev.Time), slog.Duration("duration", ev.Duration))
	ob.audit.LogAttrs(ctx, level, "sandbox egress", attrs...)
}

// traceEnv returns env with TRACEPARENT (and TRACESTATE) of ctx's span
// added, so that a command's own spans join the caller's trace; env as it
// is when ctx has no valid span or env sets TRACEPARENT itself.
func traceEnv(ctx context.Context, env []string) []string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "TRACEPARENT=") }) {
		return env
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	out := append(slices.Clip(env), "TRACEPARENT="+carrier["traceparent"])
	if ts := carrier["tracestate"]; ts != "" {
		out = append(out, "TRACESTATE="+ts)
	}
	return out
}

// processExit adds a process's exit code, once it exited.
func (p *op) processExit(info ProcessInfo) {
	if info.State == ProcessExited {
		p.exit(info.ExitCode)
	}
}

// uploadBytes is the content UploadFiles is given.
func uploadBytes(files []FileUpload) (n int64) {
	for _, f := range files {
		n += int64(len(f.Content))
	}
	return n
}

// downloadBytes is the content DownloadFiles returned.
func downloadBytes(resps []FileDownloadResponse) (n int64) {
	for _, r := range resps {
		n += int64(len(r.Content))
	}
	return n
}

// Usage is what a sandbox uses, as its engine measures it (not its
// helper: the sandbox cannot lie about it). A field the engine cannot
// measure is zero (Disk: -1). The JSON keys are snake_case, with units.
type Usage struct {
	// Read is when the engine measured.
	Read time.Time `json:"read"`
	// Started is when the sandbox's PID 1 started (Restart starts it
	// again); zero if unknown.
	Started time.Time `json:"started"`
	// CPU is the CPU time of its processes since it started.
	CPU time.Duration `json:"cpu_ns"`
	// CPUPercent is the CPU it used, in percent of one core (200 is two
	// cores busy), over the interval since the previous sample this
	// handle took (since the sandbox started, for the first).
	CPUPercent float64 `json:"cpu_percent"`
	// Memory is the memory in use now, less the page cache it can drop
	// (as docker stats shows it; Podman 4.3 counts the cache); a tmpfs's
	// files count.
	Memory uint64 `json:"memory_bytes"`
	// MemoryPeak is the most memory it used, page cache included
	// (cgroup v1's max_usage; 0 where the engine does not say).
	MemoryPeak uint64 `json:"memory_peak_bytes"`
	// MemoryLimit is its memory limit (WithMemory), or the host's memory.
	MemoryLimit uint64 `json:"memory_limit_bytes"`
	// Processes counts its processes, threads included (as the pids
	// limit counts them).
	Processes uint64 `json:"processes"`
	// NetworkRx and NetworkTx are the bytes its network interfaces
	// received and sent.
	NetworkRx uint64 `json:"network_rx_bytes"`
	NetworkTx uint64 `json:"network_tx_bytes"`
	// Disk is the bytes in its writable layer: files written outside its
	// volumes and tmpfs mounts (under WithSecureProfile the working
	// directory and /tmp are in memory, and count in Memory); -1 if
	// unknown.
	Disk int64 `json:"disk_bytes"`
}

// meterState is the previous sample of a handle, for CPUPercent.
type meterState struct {
	mu   sync.Mutex
	last engine.Usage // Read zero: none yet
}

// minWatchInterval is the shortest interval WatchUsage takes.
const minWatchInterval = 100 * time.Millisecond

// Usage measures what the sandbox uses now, through its engine (Docker's
// and Podman's stats; on Kubernetes it is an error wrapping
// errors.ErrUnsupported). It does not go through the helper, so it is no
// activity for the idle timeout or WithAutoPause, and it measures a paused
// sandbox without resuming it. A stopped sandbox is ErrStopped; one gone,
// ErrGone; a closed handle, ErrClosed. Docker answers at its stats
// collector's next tick: within a second when stats were asked for in the
// last second, at once otherwise. Without a deadline, ctx is bounded to
// 30 s (the size of the writable layer is the engine's walk of it).
func (s *Sandbox) Usage(ctx context.Context) (_ Usage, err error) {
	ctx, op := s.begin(ctx, "Usage")
	defer op.end(&err)
	ctx, cancel := bounded(ctx)
	defer cancel()
	if s.closed.Load() {
		return Usage{}, ErrClosed
	}
	if s.Stopped() {
		return Usage{}, fmt.Errorf("sandbox %s: %w", s.ID(), ErrStopped)
	}
	m, ok := s.eng.(engine.Meter)
	if !ok {
		return Usage{}, fmt.Errorf("sandbox %s: the %s engine cannot measure a sandbox's usage: %w", s.ID(), s.eng.Name(), errors.ErrUnsupported)
	}
	u, err := m.Usage(ctx, s.id)
	if err != nil {
		return Usage{}, s.dockerErr("usage", err)
	}
	return s.meter.add(u), nil
}

// add records the sample u and returns it with its CPUPercent: over the
// interval since the previous sample of the same run of the sandbox, or
// else since it started.
func (m *meterState) add(u engine.Usage) Usage {
	m.mu.Lock()
	prev := m.last
	if u.Read.After(prev.Read) {
		m.last = u
	}
	m.mu.Unlock()
	out := Usage{Read: u.Read, Started: u.Started, CPU: u.CPU, Memory: u.Memory, MemoryPeak: u.MemoryPeak,
		MemoryLimit: u.MemoryLimit, Processes: u.Processes, NetworkRx: u.NetworkRx, NetworkTx: u.NetworkTx, Disk: u.Disk}
	since, used := u.Started, u.CPU
	if !prev.Read.IsZero() && prev.Started.Equal(u.Started) && u.Read.After(prev.Read) && u.CPU >= prev.CPU {
		since, used = prev.Read, u.CPU-prev.CPU
	}
	if !since.IsZero() && u.Read.After(since) {
		out.CPUPercent = 100 * used.Seconds() / u.Read.Sub(since).Seconds()
	}
	return out
}

// WatchUsage yields a sample of Usage at once, then one every interval,
// until ctx ends (then it stops without an error) or a sample fails (its
// error is yielded, then it stops). It takes one sample at a time and
// buffers nothing: a consumer slower than every gets fewer samples. An
// interval under 100 ms yields ErrInvalidOption.
func (s *Sandbox) WatchUsage(ctx context.Context, every time.Duration) iter.Seq2[Usage, error] {
	return func(yield func(Usage, error) bool) {
		if every < minWatchInterval {
			yield(Usage{}, fmt.Errorf("%w: WatchUsage every %v: at least %v", ErrInvalidOption, every, minWatchInterval))
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			u, err := s.Usage(ctx)
			if ctx.Err() != nil {
				return
			}
			if !yield(u, err) || err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}
