package otel_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestMain builds the test images if needed and fails the run if a test
// leaves a sandbox behind.
func TestMain(m *testing.M) { testenv.Main(m) }

func testCtx(t testing.TB) context.Context {
	t.Helper()
	testenv.MustHaveEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newSandbox makes a busybox sandbox with opts under ctx's span, closed
// at the test's end.
func newSandbox(ctx context.Context, t testing.TB, opts ...sandbox.Option) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(ctx, append(append(sandboxtest.Base(), sandbox.WithImage(testenv.BusyboxImage)), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandboxtest.CloseAgain(sb, sb.Close()) })
	return sb
}

// recorder is a provider whose spans the test reads.
func recorder() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), exp
}

// attrs returns a span's attributes by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestSpans: a span per call, children of the caller's span, with the
// sandbox's ID, the call, bytes, the exit code and the path, no command
// by default, an error's status; the command sees the trace in
// TRACEPARENT, as the Execute span's child.
func TestSpans(t *testing.T) {
	tp, exp := recorder()
	ctx, root := tp.Tracer("test").Start(testCtx(t), "root")
	sb := newSandbox(ctx, t, sandbox.WithTracerProvider(tp))
	res, err := sb.Execute(ctx, "echo $TRACEPARENT; exit 3")
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("Execute: %+v, %v", res, err)
	}
	if err := sb.Write(ctx, "f.txt", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Read(ctx, "missing.txt"); err == nil {
		t.Fatal("Read of a missing file: no error")
	}
	p, err := sb.StartProcess(ctx, "echo $TRACEPARENT")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := p.Read(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	root.End()

	spans := map[string]tracetest.SpanStub{}
	ours := map[trace.SpanID]string{}
	var names []string
	for _, s := range exp.GetSpans() {
		if s.Name == "root" || strings.HasPrefix(s.Name, "sandbox.") {
			names = append(names, s.Name)
			spans[s.Name] = s
			ours[s.SpanContext.SpanID()] = s.Name
		}
	}
	want := "sandbox.New sandbox.Execute sandbox.Write sandbox.Read sandbox.StartProcess sandbox.Process.Wait sandbox.Process.Read sandbox.Close root"
	if strings.Join(names, " ") != want {
		t.Fatalf("spans %q, want %q", names, want)
	}
	for _, s := range exp.GetSpans() {
		switch {
		case s.Name == "root":
			continue
		case !strings.HasPrefix(s.Name, "sandbox."):
			// The Docker client's own spans (otelhttp): children of the
			// call that made them, New's create, copy and start, say.
			if _, ok := ours[s.Parent.SpanID()]; !ok {
				t.Errorf("the engine's span %q: parent %v, not one of the library's", s.Name, s.Parent.SpanID())
			}
			continue
		case s.Name == "sandbox.Close":
			// Close takes no context: a root, linked to the New that made
			// the handle.
			if s.Parent.IsValid() || len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != spans["sandbox.New"].SpanContext.SpanID() {
				t.Errorf("Close: parent %v, links %v; want none, and a link to New's span", s.Parent.SpanID(), s.Links)
			}
		case s.Parent.SpanID() != root.SpanContext().SpanID() || s.SpanContext.TraceID() != root.SpanContext().TraceID():
			t.Errorf("%s: parent %v, want the caller's span %v", s.Name, s.Parent.SpanID(), root.SpanContext().SpanID())
		}
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("%s: kind %v, want client", s.Name, s.SpanKind)
		}
		a := attrs(s)
		if a["sandbox.id"].AsString() != sb.ID() || "sandbox."+a["sandbox.operation"].AsString() != s.Name {
			t.Errorf("%s: sandbox.id %q, sandbox.operation %q", s.Name, a["sandbox.id"].AsString(), a["sandbox.operation"].AsString())
		}
		if _, ok := a["sandbox.command"]; ok {
			t.Errorf("%s: a command recorded by default", s.Name)
		}
	}
	ex := spans["sandbox.Execute"]
	if a := attrs(ex); a["sandbox.exit_code"].AsInt64() != 3 || a["sandbox.bytes"].AsInt64() != int64(len(res.Output)) {
		t.Errorf("Execute's attributes %v", ex.Attributes)
	}
	tp0 := fmt.Sprintf("00-%s-%s-01", ex.SpanContext.TraceID(), ex.SpanContext.SpanID())
	if strings.TrimSpace(res.Output) != tp0 {
		t.Errorf("the command's TRACEPARENT %q, want the Execute span's %q", res.Output, tp0)
	}
	start := spans["sandbox.StartProcess"]
	if tp1 := fmt.Sprintf("00-%s-%s-01", start.SpanContext.TraceID(), start.SpanContext.SpanID()); strings.TrimSpace(string(out.Data)) != tp1 {
		t.Errorf("the process's TRACEPARENT %q, want the StartProcess span's %q", out.Data, tp1)
	}
	if a := attrs(spans["sandbox.Write"]); a["sandbox.path"].AsString() != "f.txt" || a["sandbox.bytes"].AsInt64() != 3 {
		t.Errorf("Write's attributes %v", spans["sandbox.Write"].Attributes)
	}
	rd := spans["sandbox.Read"]
	if rd.Status.Code != codes.Error || !strings.Contains(rd.Status.Description, "missing.txt") || len(rd.Events) == 0 || rd.Events[0].Name != "exception" {
		t.Errorf("the failed Read's status %+v, events %v", rd.Status, rd.Events)
	}
}

// TestSpansPortsSnapshots: the port calls' spans (Dial, failed, with its
// address; Forward with its port and address; Forwarder.Close, a root
// linked to New's span) and the snapshot calls' (Snapshot, and Remove as
// a call on the sandbox the snapshot was taken of), with the snapshot's ID.
func TestSpansPortsSnapshots(t *testing.T) {
	testenv.RequireDocker(t, "snapshots are Docker images")
	tp, exp := recorder()
	ctx, root := tp.Tracer("test").Start(testCtx(t), "root")
	labels := map[string]string{"spantest": t.Name()}
	t.Cleanup(func() {
		_, err := sandbox.PruneSnapshots(context.Background(), sandbox.Filter{Labels: labels, Owner: testenv.Owner()})
		if err != nil {
			t.Error(err)
		}
	})
	sb := newSandbox(ctx, t, sandbox.WithTracerProvider(tp))
	if _, err := sb.Dial(ctx, "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("a Dial of a closed port: no error")
	}
	fwd, err := sb.Forward(ctx, "", 7000)
	if err != nil {
		t.Fatal(err)
	}
	if err := fwd.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := sb.Snapshot(ctx, sandbox.SnapshotLabels(labels))
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	root.End()

	spans := map[string]tracetest.SpanStub{}
	var names []string
	for _, s := range exp.GetSpans() {
		if strings.HasPrefix(s.Name, "sandbox.") {
			names = append(names, s.Name)
			spans[s.Name] = s
		}
	}
	want := "sandbox.New sandbox.Dial sandbox.Forward sandbox.Forwarder.Close sandbox.Snapshot sandbox.Snapshot.Remove"
	if strings.Join(names, " ") != want {
		t.Fatalf("spans %q, want %q", names, want)
	}
	short := strings.TrimPrefix(snap.ID, "sha256:")[:12]
	for name, s := range spans {
		a := attrs(s)
		if a["sandbox.id"].AsString() != sb.ID() || "sandbox."+a["sandbox.operation"].AsString() != name || s.SpanKind != trace.SpanKindClient {
			t.Errorf("%s: sandbox.id %q, sandbox.operation %q, kind %v", name, a["sandbox.id"].AsString(), a["sandbox.operation"].AsString(), s.SpanKind)
		}
		switch name {
		case "sandbox.New":
		case "sandbox.Forwarder.Close":
			if s.Parent.IsValid() || len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != spans["sandbox.New"].SpanContext.SpanID() {
				t.Errorf("Forwarder.Close: parent %v, links %v; want none, and a link to New's span", s.Parent.SpanID(), s.Links)
			}
			if a["sandbox.address"].AsString() != fwd.Addr().String() {
				t.Errorf("Forwarder.Close's attributes %v", s.Attributes)
			}
		default:
			if s.Parent.SpanID() != root.SpanContext().SpanID() {
				t.Errorf("%s: parent %v, want the caller's span %v", name, s.Parent.SpanID(), root.SpanContext().SpanID())
			}
		}
	}
	dial := spans["sandbox.Dial"]
	if attrs(dial)["sandbox.address"].AsString() != "tcp 127.0.0.1:1" || dial.Status.Code != codes.Error {
		t.Errorf("the failed Dial: attributes %v, status %+v", dial.Attributes, dial.Status)
	}
	if a := attrs(spans["sandbox.Forward"]); a["sandbox.port"].AsInt64() != 7000 || a["sandbox.address"].AsString() != fwd.Addr().String() {
		t.Errorf("Forward's attributes %v", spans["sandbox.Forward"].Attributes)
	}
	for _, name := range []string{"sandbox.Snapshot", "sandbox.Snapshot.Remove"} {
		if s := spans[name]; attrs(s)["sandbox.snapshot"].AsString() != short || s.Status.Code == codes.Error {
			t.Errorf("%s: attributes %v, status %+v; want sandbox.snapshot %s", name, s.Attributes, s.Status, short)
		}
	}
}

// TestSpansCommandAndEnv: a Redact that allows it puts the command in the
// span; a command's own TRACEPARENT is kept; without WithTracerProvider
// the global provider gets the spans.
func TestSpansCommandAndEnv(t *testing.T) {
	tp, exp := recorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	ctx, root := tp.Tracer("test").Start(testCtx(t), "root")
	sb := newSandbox(ctx, t, sandbox.WithRedact(func(kind, text string) string { return text }))
	res, err := sb.Execute(ctx, "echo $TRACEPARENT", sandbox.ExecEnv("TRACEPARENT=mine"))
	if err != nil || res.Output != "mine\n" {
		t.Fatalf("a command's own TRACEPARENT: %q, %v", res.Output, err)
	}
	out, err := sb.Command(ctx, "echo $TRACEPARENT").Output()
	if err != nil || !strings.HasPrefix(string(out), "00-"+root.SpanContext().TraceID().String()+"-") {
		t.Fatalf("Command's TRACEPARENT %q (%v), want the trace %s", out, err, root.SpanContext().TraceID())
	}
	root.End()
	var got []string
	for _, s := range exp.GetSpans() { // the library's, and the Docker client's under them
		if s.Name == "sandbox.Execute" || s.Name == "sandbox.Command" {
			got = append(got, s.Name+": "+attrs(s)["sandbox.command"].AsString())
		}
	}
	if want := []string{"sandbox.Execute: echo $TRACEPARENT", "sandbox.Command: echo $TRACEPARENT"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("spans with their commands %q, want %q", got, want)
	}
}

// BenchmarkObserve: the cost of tracing (the SDK, every span sampled, a
// batcher to an exporter that drops them) and of auditing (slog's JSON
// handler to io.Discard) on exec_echo and read_1k, beside the same calls
// without them. The four are handles on one sandbox (the second to fourth
// attached to the first's container, each with a channel of its own): a
// plain one, traced, audited, and a second plain one, the control, whose
// difference from the first is the noise the others' differences stand
// in. Each iteration makes the call on each handle in turn, each first in
// turn, so that a busier moment of the machine weighs on them alike; the
// metrics are each one's time per call and the differences. "refused" is
// a call the library refuses before any I/O (a Read of ""): the
// observation's own cost.
func BenchmarkObserve(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := testCtx(b)
	noop := sandbox.WithTracerProvider(noop.NewTracerProvider())
	plain := newSandbox(ctx, b, noop)
	attach := func(opts ...sandbox.Option) *sandbox.Sandbox {
		sb, err := sandbox.Attach(ctx, plain.ID(), append(sandboxtest.Engine(), opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(sb.Detach) // the first handle's Close removes the sandbox
		return sb
	}
	kinds := []struct {
		name string
		sb   *sandbox.Sandbox
	}{
		{"plain", plain},
		{"traced", attach(sandbox.WithTracerProvider(tp))},
		{"audited", attach(noop, sandbox.WithAudit(slog.NewJSONHandler(io.Discard, nil)))},
		{"control", attach(noop)},
	}
	if err := plain.Write(ctx, "1k", []byte(strings.Repeat("x", 1023)+"\n")); err != nil {
		b.Fatal(err)
	}
	for _, k := range kinds { // each handle's channel opened before the timing
		if _, err := k.sb.Execute(ctx, "true"); err != nil {
			b.Fatal(err)
		}
	}
	calls := []struct {
		name string
		call func(sb *sandbox.Sandbox) error
	}{
		{"exec_echo", func(sb *sandbox.Sandbox) error { _, err := sb.Execute(ctx, "echo hi"); return err }},
		{"read_1k", func(sb *sandbox.Sandbox) error { _, err := sb.Read(ctx, "1k"); return err }},
		{"refused", func(sb *sandbox.Sandbox) error {
			if _, err := sb.Read(ctx, ""); err == nil {
				return fmt.Errorf("a Read of \"\" succeeded")
			}
			return nil
		}},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			took := make([]time.Duration, len(kinds))
			n := 0
			for b.Loop() {
				for j := range kinds {
					i := (j + n) % len(kinds) // each first in turn: no order weighs on one
					t0 := time.Now()
					if err := c.call(kinds[i].sb); err != nil {
						b.Fatal(err)
					}
					took[i] += time.Since(t0)
				}
				n++
			}
			per := func(i int) float64 { return float64(took[i].Nanoseconds()) / float64(n) }
			for i, k := range kinds {
				b.ReportMetric(per(i), k.name+"-ns/call")
				if i > 0 {
					b.ReportMetric(100*(per(i)/per(0)-1), k.name+"-%")
				}
			}
		})
	}
}

// takeAll is a slog.Handler that takes every record and keeps none,
// allocating nothing (slog's own handlers use a sync.Pool, which the race
// detector makes drop buffers).
type takeAll struct{}

func (takeAll) Enabled(context.Context, slog.Level) bool  { return true }
func (takeAll) Handle(context.Context, slog.Record) error { return nil }
func (h takeAll) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h takeAll) WithGroup(string) slog.Handler           { return h }

// TestObserveAllocs: an audit record costs a call two allocations (its
// attributes, the error's text) and one more past five attributes (slog's
// record keeps five in place): on calls refused before any I/O, one
// without a path and one with, an audited sandbox allocates at most that
// many more than one with nothing configured. (A Read that reaches the
// helper is left out: its reply is handled on the channel's goroutine,
// whose allocations land on one call or another.) Not parallel: it
// counts allocations.
func TestObserveAllocs(t *testing.T) {
	ctx := testCtx(t)
	plain := newSandbox(ctx, t)
	audited := newSandbox(ctx, t, sandbox.WithAudit(takeAll{}))
	for _, c := range []struct {
		name string
		call func(sb *sandbox.Sandbox) error
		most float64
	}{
		{"empty path", func(sb *sandbox.Sandbox) error { _, err := sb.Read(ctx, ""); return err }, 2},
		{"bad limit", func(sb *sandbox.Sandbox) error { _, err := sb.Read(ctx, "f.txt", sandbox.ReadLimit(-1)); return err }, 3},
	} {
		count := func(sb *sandbox.Sandbox) float64 {
			if err := c.call(sb); err == nil {
				t.Fatalf("%s: not refused", c.name)
			}
			return testing.AllocsPerRun(100, func() { _ = c.call(sb) })
		}
		// AllocsPerRun counts the whole process's allocations: what other
		// goroutines allocate meanwhile (a sandbox's channel, the client's
		// connections, a busy machine's GC) only adds. The least of five
		// rounds, alternated, is each call's own.
		p, a := math.Inf(1), math.Inf(1)
		for range 5 {
			p, a = min(p, count(plain)), min(a, count(audited))
		}
		if a > p+c.most {
			t.Errorf("%s: %.0f allocations audited, %.0f with nothing configured: more than %.0f for the record", c.name, a, p, c.most)
		}
		t.Logf("%s: %.0f allocations audited, %.0f with nothing configured", c.name, a, p)
	}
}

// BenchmarkObserveCost: what observing a call costs the caller, in time
// and allocations, on a sandbox with nothing configured (the global
// provider with no SDK, no audit), with spans (the SDK, every span
// sampled, a batcher to an exporter that drops them), and with an audit
// (slog's JSON handler to io.Discard, no SDK): on a call the library
// refuses before any I/O (a Read of ""), and on read_1k. Unlike
// BenchmarkObserve, the allocations per call are its measure: the
// machine's load does not change them.
func BenchmarkObserveCost(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := testCtx(b)
	kinds := []struct {
		name string
		sb   *sandbox.Sandbox
	}{
		{"default", newSandbox(ctx, b)},
		{"traced", newSandbox(ctx, b, sandbox.WithTracerProvider(tp))},
		{"audited", newSandbox(ctx, b, sandbox.WithAudit(slog.NewJSONHandler(io.Discard, nil)))},
	}
	for _, k := range kinds {
		if err := k.sb.Write(ctx, "1k", []byte(strings.Repeat("x", 1023)+"\n")); err != nil {
			b.Fatal(err)
		}
	}
	for _, call := range []struct {
		name string
		call func(sb *sandbox.Sandbox) error
	}{
		{"refused", func(sb *sandbox.Sandbox) error {
			if _, err := sb.Read(ctx, ""); err == nil {
				return fmt.Errorf("a Read of \"\" succeeded")
			}
			return nil
		}},
		{"read_1k", func(sb *sandbox.Sandbox) error { _, err := sb.Read(ctx, "1k"); return err }},
	} {
		for _, k := range kinds {
			b.Run(call.name+"/"+k.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := call.call(k.sb); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
