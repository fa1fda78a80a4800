// Package enginetest checks an engine.Engine against its real backend:
// every engine of the library passes it, and so must a new one.
package enginetest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// Where the suite puts the helper, as the library does.
const (
	HelperDir  = "/.dockersandbox"
	HelperPath = HelperDir + "/sandbox-helper"
)

// Bounds the suite holds engines to (with slack for a loaded machine).
const (
	// CreateBound bounds Create of a sandbox whose image is present.
	CreateBound = 2 * time.Minute
	// RemoveBound bounds Remove.
	RemoveBound = 30 * time.Second
	// PromptBound bounds a call whose context is cancelled already.
	PromptBound = 5 * time.Second
)

// runLabel marks the suite's sandboxes; its value is unique per Spec.
const runLabel = "com.dockersandbox.enginetest"

// Spec returns the suite's spec of a sandbox of image: the helper as
// PID 1, user 1000:1000, working directory /work, and labels that the
// library's Prune finds (com.dockersandbox.sandbox=true) plus one unique
// to this spec (returned as key=value in labels).
func Spec(image string) *engine.Spec {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &engine.Spec{
		Image: image,
		Labels: map[string]string{
			"com.dockersandbox.sandbox": "true",
			"com.dockersandbox.created": time.Now().UTC().Format(time.RFC3339),
			runLabel:                    hex.EncodeToString(b),
		},
		Env:        []string{"ENGINETEST=1"},
		WorkingDir: "/work",
		User:       "1000:1000",
		Command:    []string{HelperPath, "init"},
		Helper:     engine.Helper{Dir: HelperDir, Path: HelperPath, Binary: helperbin.For},
		Memory:     256 << 20,
		PidsLimit:  256,
	}
}

// Run checks e with sandboxes of image (which must hold /etc/passwd; any
// image with the helper's architecture, busybox or distroless, does).
// It removes what it creates.
func Run(t *testing.T, e engine.Engine, image string) {
	t.Run("Name", func(t *testing.T) {
		if e.Name() == "" {
			t.Fatal("Name is empty")
		}
	})
	spec := Spec(image)
	ctx, cancel := context.WithTimeout(context.Background(), CreateBound)
	info, err := e.Create(ctx, spec)
	cancel()
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id := info.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), RemoveBound)
		defer cancel()
		_ = e.Remove(ctx, id)
	})
	if info.State != engine.StateRunning {
		t.Errorf("Create returned state %q, want running", info.State)
	}
	t.Run("Inspect", func(t *testing.T) { testInspect(t, e, id, spec) })
	t.Run("Hello", func(t *testing.T) { testHello(t, e, id) })
	t.Run("Call", func(t *testing.T) { testCall(t, e, id, spec) })
	t.Run("List", func(t *testing.T) { testList(t, e, id, spec) })
	t.Run("Copy", func(t *testing.T) { testCopy(t, e, id, spec) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, e, id) })
	t.Run("Missing", func(t *testing.T) { testMissing(t, e) })
	if m, ok := e.(engine.Meter); ok {
		t.Run("Usage", func(t *testing.T) { testUsage(t, m, id) })
	}
	if p, ok := e.(engine.Pauser); ok {
		t.Run("Pause", func(t *testing.T) { testPause(t, e, p, id) })
	}
	if st, ok := e.(engine.Stopper); ok {
		t.Run("Stop", func(t *testing.T) { testStop(t, e, st, id) })
	}
	t.Run("Remove", func(t *testing.T) { testRemove(t, e, id) })
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testInspect(t *testing.T, e engine.Engine, id string, spec *engine.Spec) {
	info, err := e.Inspect(testCtx(t), id)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if info.ID != id {
		t.Errorf("Inspect ID %q, want %q", info.ID, id)
	}
	if info.State != engine.StateRunning {
		t.Errorf("state %q, want running", info.State)
	}
	for k, v := range spec.Labels {
		if info.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, info.Labels[k], v)
		}
	}
	if len(info.Command) == 0 || info.Command[0] != HelperPath {
		t.Errorf("Command %q, want the helper's", info.Command)
	}
	if info.User != spec.User {
		t.Errorf("User %q, want %q", info.User, spec.User)
	}
	if info.Created.IsZero() || time.Since(info.Created) > time.Hour {
		t.Errorf("Created %v", info.Created)
	}
}

// attach runs the helper in mode and reads its hello.
func attach(t *testing.T, e engine.Engine, id, mode string) (engine.Stream, *proto.Reader, proto.Hello) {
	t.Helper()
	st, err := e.Exec(testCtx(t), id, []string{HelperPath, mode}, "")
	if err != nil {
		t.Fatalf("Exec %s: %v", mode, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var diag bytes.Buffer
	go func() { _, _ = io.Copy(&diag, io.LimitReader(st.Stderr(), 1<<16)) }()
	r := proto.NewReader(bufio.NewReader(st.Stdout()))
	type res struct {
		f   proto.Frame
		err error
	}
	got := make(chan res, 1)
	go func() {
		f, err := r.ReadFrameLimited(func(proto.Kind, uint32) int { return proto.MaxHello })
		got <- res{f, err}
	}()
	var f proto.Frame
	select {
	case x := <-got:
		if x.err != nil {
			t.Fatalf("read the hello: %v", x.err)
		}
		f = x.f
	case <-time.After(30 * time.Second):
		_ = st.Close()
		t.Fatal("no hello within 30s")
	}
	var h proto.Hello
	if f.Kind != proto.KindHello {
		t.Fatalf("first frame %q, not hello", f.Kind)
	}
	if err := json.Unmarshal(f.Payload, &h); err != nil {
		t.Fatalf("hello: %v", err)
	}
	if h.Version != proto.Version {
		t.Fatalf("hello version %d, want %d", h.Version, proto.Version)
	}
	return st, r, h
}

func testHello(t *testing.T, e engine.Engine, id string) {
	st, _, _ := attach(t, e, id, "serve")
	// Close unblocks a reader at once.
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, st.Stdout())
		close(done)
	}()
	time.Sleep(100 * time.Millisecond)
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case <-done:
	case <-time.After(PromptBound):
		t.Fatal("a read went on after Close")
	}
}

// testCall sends a request over stdin and reads its result: the stream
// carries both ways, and the working directory exists, owned by the user.
func testCall(t *testing.T, e engine.Engine, id string, spec *engine.Spec) {
	st, r, h := attach(t, e, id, "call")
	if h.UID != 1000 || h.GID != 1000 {
		t.Errorf("the helper runs as %d:%d, want the spec's 1000:1000", h.UID, h.GID)
	}
	body, _ := json.Marshal(proto.Request{Op: proto.OpStat, Paths: []string{spec.WorkingDir}})
	if err := proto.NewWriter(st).WriteFrame(proto.KindRequest, 1, body); err != nil {
		t.Fatalf("write the request: %v", err)
	}
	if err := st.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	for {
		f, err := r.ReadFrameLimited(func(k proto.Kind, _ uint32) int { return proto.MaxFrom(k, proto.OpStat) })
		if err != nil {
			t.Fatalf("read the result: %v", err)
		}
		if f.Kind == proto.KindAlive {
			continue
		}
		if f.Kind != proto.KindResult {
			t.Fatalf("frame %q, want a result", f.Kind)
		}
		var res proto.Result
		if err := json.Unmarshal(f.Payload, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Stats) != 1 || res.Stats[0].Error == nil || res.Stats[0].Error.Code != proto.CodeIsDir {
			t.Fatalf("stat of the working directory: %+v (want %s)", res.Stats, proto.CodeIsDir)
		}
		return
	}
}

func testList(t *testing.T, e engine.Engine, id string, spec *engine.Spec) {
	list, err := e.List(testCtx(t), map[string]string{runLabel: spec.Labels[runLabel]})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 || list[0].ID != id {
		t.Fatalf("List by the spec's label: %+v, want only %s", list, id)
	}
	if list[0].State != engine.StateRunning {
		t.Errorf("listed state %q", list[0].State)
	}
	list, err = e.List(testCtx(t), map[string]string{runLabel: ""})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	found := false
	for _, i := range list {
		found = found || i.ID == id
	}
	if !found {
		t.Errorf("List by the label's key did not find %s", id)
	}
	list, err = e.List(testCtx(t), map[string]string{runLabel: "no-such-value"})
	if err != nil || len(list) != 0 {
		t.Errorf("List by another value: %+v, %v", list, err)
	}
}

func testCopy(t *testing.T, e engine.Engine, id string, spec *engine.Spec) {
	content := []byte("hello from enginetest\n")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "sub/", Mode: 0o755, Uid: 1000, Gid: 1000, ModTime: time.Now()})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "sub/f.txt", Mode: 0o640, Uid: 1000, Gid: 1000, Size: int64(len(content)), ModTime: time.Now()})
	_, _ = tw.Write(content)
	_ = tw.Close()
	if err := e.CopyTo(testCtx(t), id, spec.WorkingDir, &buf); err != nil {
		t.Fatalf("CopyTo: %v", err)
	}
	rc, err := e.CopyFrom(testCtx(t), id, path.Join(spec.WorkingDir, "sub/f.txt"))
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatalf("CopyFrom's archive: %v", err)
	}
	got, _ := io.ReadAll(io.LimitReader(tr, 1<<20))
	rc.Close()
	if hdr.Name != "f.txt" || !bytes.Equal(got, content) || hdr.Uid != 1000 || hdr.Mode&0o777 != 0o640 {
		t.Errorf("round trip: %s uid %d mode %o %q", hdr.Name, hdr.Uid, hdr.Mode, got)
	}
	// A directory: its tree, named after its base name.
	rc, err = e.CopyFrom(testCtx(t), id, spec.WorkingDir)
	if err != nil {
		t.Fatalf("CopyFrom of the working directory: %v", err)
	}
	names := map[string]*tar.Header{}
	tr = tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		// Directories end in "/" (Docker) or not (Podman).
		names[strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")] = hdr
	}
	rc.Close()
	base := path.Base(spec.WorkingDir)
	if d := names[base]; d == nil || d.Typeflag != tar.TypeDir || d.Uid != 1000 {
		t.Errorf("the working directory is missing or not the user's: %+v (names %v)", d, keys(names))
	}
	if names[base+"/sub/f.txt"] == nil {
		t.Errorf("the directory's archive lacks the file: %v", names)
	}
	_, err = e.CopyFrom(testCtx(t), id, "/no/such/file")
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, engine.ErrNotFound) {
		t.Errorf("CopyFrom of a missing file: %v, want fs.ErrNotExist (and not ErrNotFound)", err)
	}
	// A missing directory is refused (Docker) or made (Podman).
	err = e.CopyTo(testCtx(t), id, "/no/such/dir", bytes.NewReader(emptyTar()))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyTo into a missing directory: %v, want fs.ErrNotExist or nil", err)
	}
}

func emptyTar() []byte {
	var buf bytes.Buffer
	_ = tar.NewWriter(&buf).Close()
	return buf.Bytes()
}

// testCancelled calls each method with a cancelled context.
func testCancelled(t *testing.T, e engine.Engine, id string) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]func() error{
		"Inspect": func() error { _, err := e.Inspect(ctx, id); return err },
		"List":    func() error { _, err := e.List(ctx, nil); return err },
		"Exec": func() error {
			st, err := e.Exec(ctx, id, []string{HelperPath, "serve"}, "")
			if st != nil {
				st.Close()
			}
			return err
		},
		"CopyFrom": func() error {
			rc, err := e.CopyFrom(ctx, id, "/etc/passwd")
			if rc != nil {
				rc.Close()
			}
			return err
		},
		"CopyTo": func() error { return e.CopyTo(ctx, id, "/tmp", bytes.NewReader(emptyTar())) },
		"Create": func() error {
			info, err := e.Create(ctx, Spec("enginetest-no-such-image:none"))
			if err == nil {
				_ = e.Remove(context.Background(), info.ID)
			}
			return err
		},
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
		if d := time.Since(start); d > PromptBound {
			t.Errorf("%s with a cancelled context took %v", name, d)
		}
	}
	if info, err := e.Inspect(testCtx(t), id); err != nil || info.State != engine.StateRunning {
		t.Errorf("after the cancelled calls: %v, %v", info.State, err)
	}
}

func testMissing(t *testing.T, e engine.Engine) {
	const missing = "enginetest-no-such-sandbox"
	if _, err := e.Inspect(testCtx(t), missing); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Inspect of a missing sandbox: %v, want ErrNotFound", err)
	}
	if _, err := e.Exec(testCtx(t), missing, []string{HelperPath, "serve"}, ""); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Exec in a missing sandbox: %v, want ErrNotFound", err)
	}
	if _, err := e.CopyFrom(testCtx(t), missing, "/"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("CopyFrom of a missing sandbox: %v, want ErrNotFound", err)
	}
	if err := e.CopyTo(testCtx(t), missing, "/", bytes.NewReader(emptyTar())); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("CopyTo into a missing sandbox: %v, want ErrNotFound", err)
	}
	if err := e.Remove(testCtx(t), missing); err != nil {
		t.Errorf("Remove of a missing sandbox: %v, want nil", err)
	}
}

// testUsage: a Meter measures the running sandbox (or says
// errors.ErrUnsupported, as a relay of an engine that cannot), and a
// missing one is ErrNotFound.
func testUsage(t *testing.T, m engine.Meter, id string) {
	u, err := m.Usage(testCtx(t), id)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("Usage: %v", err)
	}
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if u.Read.IsZero() || time.Since(u.Read) > time.Hour || !u.Started.IsZero() && u.Started.After(u.Read) {
		t.Errorf("Usage read at %v, started %v", u.Read, u.Started)
	}
	if u.Disk < -1 {
		t.Errorf("Usage Disk %d, want -1 (unknown) or more", u.Disk)
	}
	if _, err := m.Usage(testCtx(t), "dockersandbox-enginetest-missing"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Usage of a missing sandbox: %v, want ErrNotFound", err)
	}
}

func testPause(t *testing.T, e engine.Engine, p engine.Pauser, id string) {
	if err := p.Pause(testCtx(t), id); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	info, err := e.Inspect(testCtx(t), id)
	if err != nil || info.State != engine.StatePaused {
		t.Errorf("paused: state %q, %v", info.State, err)
	}
	if st, err := e.Exec(testCtx(t), id, []string{HelperPath, "serve"}, ""); !errors.Is(err, engine.ErrPaused) {
		if st != nil {
			st.Close()
		}
		t.Errorf("Exec in a paused sandbox: %v, want ErrPaused", err)
	}
	if err := p.Unpause(testCtx(t), id); err != nil {
		t.Fatalf("Unpause: %v", err)
	}
	attach(t, e, id, "serve")
}

func testStop(t *testing.T, e engine.Engine, s engine.Stopper, id string) {
	start := time.Now()
	if err := s.Stop(testCtx(t), id, 5*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Stop took %v (the helper ends at once on SIGTERM)", d)
	}
	info, err := e.Inspect(testCtx(t), id)
	if err != nil || info.State != engine.StateExited {
		t.Errorf("stopped: state %q, %v", info.State, err)
	}
	if st, err := e.Exec(testCtx(t), id, []string{HelperPath, "serve"}, ""); !errors.Is(err, engine.ErrNotRunning) {
		if st != nil {
			st.Close()
		}
		t.Errorf("Exec in a stopped sandbox: %v, want ErrNotRunning", err)
	}
	if m, ok := e.(engine.Meter); ok {
		if _, err := m.Usage(testCtx(t), id); !errors.Is(err, engine.ErrNotRunning) && !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("Usage of a stopped sandbox: %v, want ErrNotRunning", err)
		}
	}
	if err := s.Start(testCtx(t), id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	attach(t, e, id, "serve")
}

func testRemove(t *testing.T, e engine.Engine, id string) {
	st, _, _ := attach(t, e, id, "serve")
	ctx, cancel := context.WithTimeout(context.Background(), RemoveBound)
	defer cancel()
	start := time.Now()
	if err := e.Remove(ctx, id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if d := time.Since(start); d > RemoveBound {
		t.Errorf("Remove took %v", d)
	}
	// The stream to a process of the removed sandbox ends.
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, st.Stdout())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(RemoveBound):
		t.Error("a stream into the removed sandbox did not end")
	}
	if _, err := e.Inspect(testCtx(t), id); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Inspect after Remove: %v, want ErrNotFound", err)
	}
	if _, err := e.Exec(testCtx(t), id, []string{HelperPath, "serve"}, ""); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Exec after Remove: %v, want ErrNotFound", err)
	}
	if err := e.Remove(testCtx(t), id); err != nil {
		t.Errorf("Remove again: %v", err)
	}
}

func keys(m map[string]*tar.Header) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
