package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/enginerelay"
	"github.com/moby/moby/client"
)

// EngineVar selects the engine the tests run on: unset, Docker (or Podman)
// from the environment; "relay:PATH", the engine served by
// internal/enginerelay at the unix socket PATH (the Kubernetes engine, from
// the k8s module's TestCoreSuite).
const EngineVar = "DOCKERSANDBOX_TEST_ENGINE"

var relayed struct {
	once sync.Once
	e    engine.Engine
	err  error
}

// relayAddr returns the socket of EngineVar, "" for Docker.
func relayAddr() (string, error) {
	v := os.Getenv(EngineVar)
	if v == "" {
		return "", nil
	}
	addr, ok := strings.CutPrefix(v, "relay:")
	if !ok || addr == "" {
		return "", fmt.Errorf("testenv: %s=%q: want relay:/path/to.sock or nothing", EngineVar, v)
	}
	return addr, nil
}

// Relayed reports whether the tests run on a relayed engine
// (EngineVar), not on Docker.
func Relayed() bool {
	addr, _ := relayAddr()
	return addr != ""
}

// Engine returns the relayed engine of EngineVar, nil when the tests run
// on Docker. It exits the test process if the relay cannot be reached
// (Main checks that first).
func Engine() engine.Engine {
	e, err := relayEngine()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return e
}

func relayEngine() (engine.Engine, error) {
	addr, err := relayAddr()
	if err != nil || addr == "" {
		return nil, err
	}
	relayed.once.Do(func() { relayed.e, relayed.err = enginerelay.Dial(addr) })
	return relayed.e, relayed.err
}

// EngineName is the name of the engine the tests run on: "docker" (or
// Podman's), or the relayed engine's ("kubernetes").
func EngineName() string {
	if e := Engine(); e != nil {
		return e.Name()
	}
	return "docker"
}

// RequireDocker skips tb, saying why, when the tests do not run on Docker
// (or Podman): for what is inherently Docker's (snapshots, network modes,
// the daemon itself). The README of the k8s module lists them.
func RequireDocker(tb testing.TB, why string) {
	tb.Helper()
	if Relayed() {
		tb.Skipf("Docker only, not on %s: %s", EngineName(), why)
	}
}

// runRelayed runs the tests on the relayed engine: no Docker images to
// ensure (the engine's side has them), leaks found by the engine's List.
func runRelayed(m *testing.M) int {
	e, err := relayEngine()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := checkEngineLeaks(context.Background(), e, Owner()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// checkEngineLeaks removes the sandboxes of owner on e and reports them.
func checkEngineLeaks(ctx context.Context, e engine.Engine, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	infos, err := e.List(ctx, map[string]string{LabelOwner: owner})
	if err != nil {
		return fmt.Errorf("testenv: listing the sandboxes of owner %q on %s: %w", owner, e.Name(), err)
	}
	if len(infos) == 0 {
		return nil
	}
	msg := fmt.Sprintf("testenv: FAIL: %d sandbox(es) leaked by this test process on %s (owner %s):", len(infos), e.Name(), owner)
	for _, in := range infos {
		msg += "\n  " + in.Name + " " + in.ID
		msg += removal(e.Remove(ctx, in.ID))
	}
	return leakErr(msg)
}

// exitMark ends the output of execEngine's command with its exit status.
const exitMark = "\ndockersandbox-testenv-exit:"

// execEngine is Exec on the relayed engine (which has no exit status: a
// shell prints it after the command).
func execEngine(tb testing.TB, e engine.Engine, id, user string, cmd ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := `"$@"; printf '` + strings.ReplaceAll(exitMark, "\n", `\n`) + `%d' $?`
	if user == "0" || user == "root" || user == "0:0" {
		// A pod's processes all run as its user: root is asked of a
		// sandbox that runs as root (the script checks), as "".
		script = `[ "$(id -u)" = 0 ] || { echo "testenv: the sandbox does not run as root: $(id)"; printf '` + strings.ReplaceAll(exitMark, "\n", `\n`) + `%d' 126; exit; }; ` + script
		user = ""
	}
	argv := append([]string{"/bin/sh", "-c", script, "sh"}, cmd...)
	s, err := e.Exec(ctx, id, argv, user)
	if err != nil {
		tb.Fatalf("exec %v: %v", cmd, err)
	}
	defer s.Close()
	_ = s.CloseWrite()
	var stderr bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&stderr, s.Stderr()); close(done) }()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	out, err := io.ReadAll(s.Stdout())
	<-done
	if err != nil {
		tb.Fatalf("exec %v: %v", cmd, err)
	}
	i := bytes.LastIndex(out, []byte(exitMark))
	if i < 0 {
		tb.Fatalf("exec %v: no exit status: %q %q", cmd, out, stderr.String())
	}
	code, err := strconv.Atoi(string(out[i+len(exitMark):]))
	if err != nil {
		tb.Fatalf("exec %v: bad exit status: %q", cmd, out[i:])
	}
	res := string(out[:i]) + stderr.String()
	if code != 0 {
		tb.Fatalf("%v: exit %d: %q", cmd, code, res)
	}
	return res
}

// copyEngine is CopyFiles on the relayed engine.
func copyEngine(tb testing.TB, e engine.Engine, id, dir string, files ...File) {
	tb.Helper()
	buf := filesTar(tb, files)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.CopyTo(ctx, id, dir, buf); err != nil {
		tb.Fatalf("copy into %s: %v", dir, err)
	}
}

// sandboxExistsEngine is SandboxExists on the relayed engine.
func sandboxExistsEngine(tb testing.TB, e engine.Engine, id string) bool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.Inspect(ctx, id)
	if err == nil {
		return true
	}
	if !isNotFound(err) {
		tb.Fatal(err)
	}
	return false
}

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }

// BackdoorClient is Client for a test that reaches the sandbox behind the
// library's back only through Exec and CopyFiles: nil on a relayed engine
// (they use the engine then), Client otherwise.
func BackdoorClient(tb testing.TB) *client.Client {
	tb.Helper()
	if Relayed() {
		return nil
	}
	return Client(tb)
}

// Owned returns the IDs of the sandboxes (in any state) this test process
// made that exist, on the engine the tests run on.
func Owned(tb testing.TB) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e := Engine(); e != nil {
		infos, err := e.List(ctx, map[string]string{LabelOwner: Owner()})
		if err != nil {
			tb.Fatal(err)
		}
		ids := make([]string, len(infos))
		for i, in := range infos {
			ids[i] = in.ID
		}
		return ids
	}
	ids, err := Leaked(ctx, Client(tb), Owner())
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}
