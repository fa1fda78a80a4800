//go:build linux

package sandbox_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noHang bounds every call that must fail rather than hang: far above what
// any of them takes, far below the test timeout.
const noHang = 30 * time.Second

// signalWriter closes ready at the first write of a line containing want.
type signalWriter struct {
	once  sync.Once
	want  string
	ready chan struct{}
	mu    sync.Mutex
	buf   strings.Builder
}

func newSignalWriter(want string) *signalWriter {
	return &signalWriter{want: want, ready: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// startLong starts a long command in the background and waits until it
// runs; its result arrives on the returned channel.
func startLong(t *testing.T, sb *sandbox.DockerSandbox) <-chan error {
	t.Helper()
	w := newSignalWriter("started")
	done := make(chan error, 1)
	go func() {
		_, err := sb.Execute(context.Background(), "echo started; sleep 1000", sandbox.ExecTimeout(0), sandbox.ExecOutput(w))
		done <- err
	}()
	select {
	case <-w.ready:
	case err := <-done:
		t.Fatalf("the long command ended at once: %v", err)
	case <-time.After(noHang):
		t.Fatal("the long command did not start")
	}
	return done
}

// within waits for a result from ch, failing the test after noHang.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(noHang):
		t.Fatalf("%s: no answer within %v", what, noHang)
		panic("unreachable")
	}
}

// async runs fn in a goroutine and returns its error on a channel.
func async(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// The daemon stops and restarts under a sandbox: calls in flight and calls
// while it is down fail clearly and promptly; after the restart the
// sandbox's container is gone (it died with the daemon), which the next
// call says; Close works.
func TestDaemonRestart(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage,
		sandbox.WithClientOptions(client.WithHost(d.host)), sandbox.WithNetworkMode("none"))...)
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close() })
	require.NoError(t, sb.Write(ctx, "kept.txt", []byte("before")))
	long := startLong(t, sb)
	shared := async(func() error { _, err := sb.Execute(ctx, "sleep 1000", sandbox.ExecTimeout(0)); return err })

	stopped := make(chan struct{})
	go func() { d.stop(); close(stopped) }()
	within(t, stopped, "stop the daemon")

	for name, ch := range map[string]<-chan error{"own exec": long, "shared channel": shared} {
		err := within(t, ch, "command in flight when the daemon stopped, on its "+name)
		require.Error(t, err, name)
		// The helper's connection broke; whether the daemon still answered
		// then decides what else the error says.
		assert.True(t, errors.Is(err, sandbox.ErrHelper) || errors.Is(err, sandbox.ErrGone), "%s: %v", name, err)
		assert.NotErrorIs(t, err, fs.ErrNotExist, name)
		t.Logf("in flight, %s: %v", name, err)
	}

	// While the daemon is down, every call fails at once, saying so.
	down := map[string]func() error{
		"execute": func() error { _, err := sb.Execute(ctx, "true"); return err },
		"read":    func() error { _, err := sb.Read(ctx, "kept.txt"); return err },
		"write":   func() error { return sb.Write(ctx, "new.txt", []byte("x")) },
		"upload": func() error {
			_, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "up.txt", Content: []byte("x")}})
			return err
		},
		"download": func() error { _, err := sb.DownloadFiles(ctx, []string{"kept.txt"}); return err },
	}
	for name, call := range down {
		err := within(t, async(call), name+" while the daemon is down")
		assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable, name)
		assert.NotErrorIs(t, err, fs.ErrNotExist, "%s: a missing socket is not a missing file", name)
	}

	d.start()
	// The container died with the daemon (no live restore): the next call
	// says it is gone. (With live restore it would work.)
	res, err := sb.Execute(ctx, "cat kept.txt")
	t.Logf("after the restart: %v", err)
	if err != nil {
		assert.ErrorIs(t, err, sandbox.ErrGone)
	} else {
		assert.Equal(t, "before", res.Output)
	}
	_, err = sb.Read(ctx, "kept.txt")
	if err != nil {
		assert.ErrorIs(t, err, sandbox.ErrGone)
	}
	require.NoError(t, sb.Close())
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "Close removed the container")
}

// childEnv makes the test binary, re-run by a test, act as a host process
// that owns a sandbox (see TestHelperProcessSandbox).
const childEnv = "DOCKERSANDBOX_TEST_CHILD"

// TestHelperProcessSandbox is not a test: run by startChild as a child
// process, it creates a sandbox (with an idle timeout, a lifetime or
// neither, as the environment says), prints its ID, starts `sleep 1000` in
// it, prints READY and waits to be killed.
func TestHelperProcessSandbox(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run as a child process by the host-process tests")
	}
	var opts []sandbox.Option
	switch mode {
	case "idle":
		opts = append(opts, sandbox.WithIdleTimeout(2*time.Second))
	case "lifetime":
		opts = append(opts, sandbox.WithLifetime(5*time.Second))
	case "orphan":
		// The prune test removes this run's orphans only: others' belong
		// to tests running beside it on the same daemon.
		opts = append(opts, sandbox.WithLabels(map[string]string{orphanLabel: os.Getenv(orphanRunEnv)}))
	}
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, opts...)...)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ID", sb.ID())
	startLong(t, sb)
	fmt.Println("READY")
	time.Sleep(time.Hour)
}

// startChild runs TestHelperProcessSandbox in a child process and returns
// its sandbox's ID once `sleep 1000` runs in it. Whatever happens, the
// child is killed and the container removed when the test ends.
func startChild(t *testing.T, mode string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessSandbox$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var id string
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if id != "" {
			_ = removeBox(t, id)
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the child process ended before it was ready:\n%s", stderr.String())
			}
			if v, found := strings.CutPrefix(line, "ID "); found {
				id = v
			}
			if line == "READY" {
				require.NotEmpty(t, id)
				go func() { // drain, so that the child never blocks on its output
					for range lines {
					}
				}()
				return cmd, id
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("the child process did not get ready:\n%s", stderr.String())
		}
	}
}

// killChild kills the child process as a crash would: SIGKILL, no Close.
func killChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// waitGone waits, at most noHang, until the container id no longer exists.
// On another engine than Docker, an ended sandbox counts: nothing removes a
// pod whose PID 1 ended (no controller; Prune does, as the k8s README
// says), so the test removes it then.
func waitGone(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(noHang)
	if testenv.Relayed() {
		for {
			info, err := inspectBox(t, id)
			if errors.Is(err, engine.ErrNotFound) {
				return
			}
			require.NoError(t, err)
			if info.State != engine.StateRunning {
				require.NoError(t, removeBox(t, id), "the ended sandbox %s (%s)", id, info.State)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("sandbox %s still runs %v after its owner died", id, noHang)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	cli := testenv.Client(t)
	for {
		_, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) || err != nil && strings.Contains(err.Error(), "no such container") { // Podman, mid-removal
			return
		}
		require.NoError(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("container %s still exists %v after its owner died", id, noHang)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func running(t *testing.T, id string) bool {
	t.Helper()
	info, err := inspectBox(t, id)
	require.NoError(t, err)
	return info.State == engine.StateRunning
}

// A host process killed mid-session (SIGKILL: no Close, no deferred
// cleanup) does not leak its sandbox: the dropped connection kills the
// running command, and the helper's idle timeout or lifetime ends the
// container, which Docker then removes; the next New removes the port
// socket directory it left.
func TestHostProcessKilled(t *testing.T) {
	t.Parallel()
	testenv.MustHaveEngine(t)
	for _, mode := range []string{"idle", "lifetime"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd, id := startChild(t, mode)
			require.True(t, running(t, id))
			dir := portsDirOf(t, id)
			killChild(t, cmd)
			waitGone(t, id)
			requirePortDirSwept(t, dir)
		})
	}
}

// The lifetime ends a sandbox even while a command runs in it; the call
// fails with ErrGone, promptly.
func TestLifetimeEndsBusySandbox(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithLifetime(3*time.Second))
	start := time.Now()
	r := within(t, async2(func() (sandbox.ExecuteResponse, error) {
		return sb.Execute(context.Background(), "sleep 1000", sandbox.ExecTimeout(0))
	}), "a command outliving the lifetime")
	t.Logf("the command ended after %v: %v", time.Since(start), r.err)
	assert.ErrorIs(t, r.err, sandbox.ErrGone)
	waitGone(t, sb.ID())
	t.Logf("the container went after %v", time.Since(start))
}

// The idle timeout spares a sandbox in use and ends a forgotten one.
// (5 s: the clock runs from the container's start, and on 2 loaded cores
// New's end and the first call's exec can be seconds apart.)
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithIdleTimeout(5*time.Second))
	// Busy for longer than the idle timeout: a running command counts.
	res, err := sb.Execute(testCtx(t), "sleep 7; echo done")
	require.NoError(t, err)
	assert.Equal(t, "done\n", res.Output)
	// Then left alone.
	waitGone(t, sb.ID())
	_, err = sb.Execute(testCtx(t), "true")
	assert.ErrorIs(t, err, sandbox.ErrGone)
}

// outcome is what a function returned.
type outcome[T any] struct {
	v   T
	err error
}

// async2 runs fn in a goroutine and returns its results on a channel.
func async2[T any](fn func() (T, error)) <-chan outcome[T] {
	ch := make(chan outcome[T], 1)
	go func() {
		v, err := fn()
		ch <- outcome[T]{v, err}
	}()
	return ch
}

// orphanLabel marks the sandboxes of TestPruneDeadOwners's children, with
// the run's value from orphanRunEnv.
const (
	orphanLabel  = "dockersandbox-test-orphan-run"
	orphanRunEnv = "DOCKERSANDBOX_TEST_ORPHAN_RUN"
)

// Prune removes the sandboxes whose owner process died (here: killed, so
// that its sandbox, without idle timeout or lifetime, lives on); so does
// the CLI's `sandbox prune -dead-owners`. Sandboxes of live owners stay.
func TestPruneDeadOwners(t *testing.T) {
	mine := newSandbox(t, testenv.BusyboxImage) // a live owner's: kept
	run := rand.Text()[:10]
	t.Setenv(orphanRunEnv, run) // the children label their sandboxes with it
	scope := map[string]string{orphanLabel: run}
	orphan := func(t *testing.T) string {
		cmd, id := startChild(t, "orphan")
		killChild(t, cmd)
		time.Sleep(time.Second)
		require.True(t, running(t, id), "without a lifetime or idle timeout, the orphan lives on")
		return id
	}

	t.Run("API", func(t *testing.T) {
		id := orphan(t)
		removed, err := sandbox.Prune(testCtx(t), sandbox.Filter{DeadOwners: true, Labels: scope}, onEngine()...)
		require.NoError(t, err)
		assert.Contains(t, removed, id)
		assert.NotContains(t, removed, mine.ID())
		waitGone(t, id)
	})

	t.Run("CLI", func(t *testing.T) {
		testenv.RequireDocker(t, "the CLI (cmd/sandbox) reaches Docker from the environment: it has no engine flag yet")
		bin := filepath.Join(t.TempDir(), "sandbox")
		out, err := exec.Command("go", "build", "-o", bin, "./cmd/sandbox").CombinedOutput()
		require.NoError(t, err, "build the CLI: %s", out)
		id := orphan(t)
		out, err = exec.Command(bin, "prune", "-dead-owners", "-label", orphanLabel+"="+run, "-json").Output()
		require.NoError(t, err, "sandbox prune: %s", out)
		var removed []string
		require.NoError(t, json.Unmarshal(out, &removed), "%s", out)
		assert.Contains(t, removed, id)
		assert.NotContains(t, removed, mine.ID())
		waitGone(t, id)
	})

	assert.True(t, running(t, mine.ID()))
}

// Prune(Filter{OlderThan: d}) removes the sandboxes created before the age and keeps
// the others. It runs on a private daemon: on the shared one it would
// remove other tests' sandboxes.
func TestPruneOlderThan(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	opts := sandboxOptions(testenv.BusyboxImage, sandbox.WithClient(d.cli), sandbox.WithNetworkMode("none"))
	old, err := sandbox.New(ctx, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { old.Close() })
	// The creation label counts whole seconds, and is stamped before the
	// container is made: ages are only good to a second or two.
	time.Sleep(8 * time.Second)
	youngStart := time.Now()
	young, err := sandbox.New(ctx, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { young.Close() })
	// On a loaded machine New takes seconds: the threshold is the young
	// one's age (from before its New) plus a margin, which the old one
	// (8 s and its own New older) exceeds.
	olderThan := time.Since(youngStart).Round(time.Second) + 3*time.Second

	_, err = sandbox.Prune(ctx, sandbox.Filter{OlderThan: -time.Second}, sandbox.WithClient(d.cli))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	_, err = sandbox.Prune(ctx, sandbox.Filter{}, sandbox.WithClient(d.cli))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "Prune needs a selection")

	removed, err := sandbox.Prune(ctx, sandbox.Filter{OlderThan: olderThan}, sandbox.WithClient(d.cli))
	require.NoError(t, err)
	assert.Equal(t, []string{old.ID()}, removed)
	_, err = old.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrGone)
	res, err := young.Execute(ctx, "echo alive")
	require.NoError(t, err)
	assert.Equal(t, "alive\n", res.Output)
	assert.NoError(t, old.Close(), "Close of a pruned sandbox")
}

// Attach finds a running sandbox by ID or name: the same container, files
// and working directory (also under the secure profile, whose working dir
// is a mount Docker knows nothing of); its Close removes the container.
func TestAttach(t *testing.T) {
	t.Parallel()
	for _, profile := range []struct {
		name string
		opts []sandbox.Option
	}{
		{"default", nil},
		{"secure", []sandbox.Option{sandbox.WithSecureProfile()}},
	} {
		t.Run(profile.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			name := fmt.Sprintf("sandbox-attach-%s-%d", profile.name, time.Now().UnixNano())
			sb := newSandbox(t, testenv.BusyboxImage, append(profile.opts,
				sandbox.WithName(name), sandbox.WithWorkingDir("/home/sandbox/project"))...)
			require.NoError(t, sb.Write(ctx, "notes.txt", []byte("from the creator")))
			wantUser := mustSh(t, sb, "id -u")

			for _, ref := range []string{sb.ID(), name} {
				a, err := sandbox.Attach(ctx, ref, onEngine()...)
				require.NoError(t, err, ref)
				assert.Equal(t, sb.ID(), a.ID())
				assert.Equal(t, "/home/sandbox/project", a.WorkingDir())
				page, err := a.Read(ctx, "notes.txt")
				require.NoError(t, err)
				assert.Equal(t, "from the creator", page.Content)
				res, err := a.Execute(ctx, "pwd; id -u")
				require.NoError(t, err)
				assert.Equal(t, "/home/sandbox/project\n"+wantUser+"\n", res.Output)
				require.NoError(t, a.Write(ctx, "reply.txt", []byte("from "+ref)))
				page, err = sb.Read(ctx, "reply.txt")
				require.NoError(t, err)
				assert.Equal(t, "from "+ref, page.Content)
			}

			a, err := sandbox.Attach(ctx, name, onEngine()...)
			require.NoError(t, err)
			require.NoError(t, a.Close())
			_, err = inspectBox(t, sb.ID())
			assert.ErrorIs(t, err, engine.ErrNotFound, "Close of an attached sandbox removes the container")
			_, err = sb.Execute(ctx, "true")
			assert.ErrorIs(t, err, sandbox.ErrGone)
		})
	}
}

func TestAttachRefused(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// No such container.
	_, err := sandbox.Attach(ctx, "dockersandbox-no-such-container", onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrGone)
	if testenv.Relayed() {
		t.Skip("the rest is Docker's: a container made without the library, and one killed from outside (a pod's PID 1 cannot be killed through the engine)")
	}
	cli := testenv.Client(t)

	// Not a sandbox: a container without the library's label.
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testenv.BusyboxImage, Cmd: []string{"sleep", "1000"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), plain.ID, client.ContainerRemoveOptions{Force: true})
	})
	_, err = sandbox.Attach(ctx, plain.ID, onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)

	// A sandbox that is not running.
	sb := newSandbox(t, testenv.BusyboxImage)
	_, err = cli.ContainerKill(ctx, sb.ID(), client.ContainerKillOptions{Signal: "KILL"})
	require.NoError(t, err)
	_, err = sandbox.Attach(ctx, sb.ID(), onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrGone)
}

// A container killed or removed from outside, during a command or between
// calls, makes every call fail with ErrGone, promptly; Close still works.
func TestContainerGoneFromOutside(t *testing.T) {
	t.Parallel()
	kill := map[string]func(ctx context.Context, id string) error{
		"removed": func(ctx context.Context, id string) error { return testEngine(t).Remove(ctx, id) },
	}
	if !testenv.Relayed() { // a pod's PID 1 cannot be killed through the engine
		cli := testenv.Client(t)
		kill["killed"] = func(ctx context.Context, id string) error {
			_, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
			return err
		}
		kill["removed"] = func(ctx context.Context, id string) error {
			_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			return err
		}
	}
	for how, end := range kill {
		for _, when := range []string{"during a command", "between calls"} {
			t.Run(how+" "+when, func(t *testing.T) {
				t.Parallel()
				ctx := testCtx(t)
				sb := newSandbox(t, testenv.BusyboxImage)
				require.NoError(t, sb.Write(ctx, "f.txt", []byte("content")))
				if when == "during a command" {
					long := startLong(t, sb) // its own exec
					shared := async(func() error { _, err := sb.Execute(ctx, "sleep 1000", sandbox.ExecTimeout(0)); return err })
					time.Sleep(200 * time.Millisecond) // let the shared-channel one start too
					require.NoError(t, end(ctx, sb.ID()))
					assert.ErrorIs(t, within(t, long, "command on its own exec"), sandbox.ErrGone)
					assert.ErrorIs(t, within(t, shared, "command on the shared channel"), sandbox.ErrGone)
				} else {
					require.NoError(t, end(ctx, sb.ID()))
				}
				calls := map[string]func() error{
					"execute": func() error { _, err := sb.Execute(ctx, "true"); return err },
					"read":    func() error { _, err := sb.Read(ctx, "f.txt"); return err },
					"write":   func() error { return sb.Write(ctx, "g.txt", []byte("x")) },
					"ls":      func() error { _, err := sb.Ls(ctx, "."); return err },
					"upload": func() error {
						_, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "u.txt", Content: []byte("x")}})
						return err
					},
					"upload large": func() error { // through Docker's archive API
						_, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "big.bin", Content: make([]byte, 3<<20)}})
						return err
					},
					"download": func() error { _, err := sb.DownloadFiles(ctx, []string{"f.txt"}); return err },
				}
				for name, call := range calls {
					assert.ErrorIs(t, within(t, async(call), name), sandbox.ErrGone, name)
				}
				assert.NoError(t, sb.Close())
			})
		}
	}
}

// A command that exceeds the memory limit is reported as an out-of-memory
// kill (exit 137, OOMKilled), distinct from another SIGKILL; the sandbox
// keeps working.
func TestOutOfMemory(t *testing.T) {
	skipInShort(t)
	t.Parallel()
	opts := []sandbox.Option{sandbox.WithMemory(64 << 20)}
	if !testenv.Relayed() { // a Kubernetes node has no swap for pods by default
		opts = append(opts, sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
			host.MemorySwap = 64 << 20 // no swap to spill into
		}))
	}
	sb := newSandbox(t, testenv.DebianImage, opts...)
	ctx := testCtx(t)
	res, err := sb.Execute(ctx, `python3 -c "a = b'x' * (512 * 1024 * 1024)"`)
	require.NoError(t, err)
	assert.Equal(t, 137, res.ExitCode, res.Output)
	assert.True(t, res.OOMKilled, "an OOM kill is reported")

	res, err = sb.Execute(ctx, "kill -9 $$")
	require.NoError(t, err)
	assert.Equal(t, 137, res.ExitCode)
	assert.False(t, res.OOMKilled, "another SIGKILL is not an OOM kill")

	c := sb.Command(ctx, `python3 -c "a = b'x' * (512 * 1024 * 1024)"`)
	err = c.Run()
	var exitErr *sandbox.ExitError
	require.ErrorAs(t, err, &exitErr)
	assert.True(t, exitErr.OOMKilled())
	assert.Contains(t, err.Error(), "out of memory")

	assert.Equal(t, "ok", mustSh(t, sb, "echo ok"), "the sandbox survives")
}

// scratch mounts a size-limited tmpfs at /workspace (a volume, which
// Docker's archive API sees, unlike a plain tmpfs mount).
func scratch(t *testing.T, size string, bytes int64) sandbox.Option {
	if testenv.Podman(t) {
		// Podman's local volume driver ignores the tmpfs size; a tmpfs mount
		// honours it, and on Podman transfers go through the helper, which
		// sees tmpfs mounts (Docker's archive API does not).
		return sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
			host.Mounts = append(host.Mounts, mount.Mount{
				Type: mount.TypeTmpfs, Target: "/workspace",
				TmpfsOptions: &mount.TmpfsOptions{SizeBytes: bytes, Mode: 0o1777},
			})
		})
	}
	return sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
		host.Mounts = append(host.Mounts, mount.Mount{
			Type: mount.TypeVolume, Target: "/workspace",
			VolumeOptions: &mount.VolumeOptions{NoCopy: true, DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
				"type": "tmpfs", "device": "tmpfs", "o": "size=" + size + ",mode=1777",
			}}},
		})
	})
}

// A full disk during a write is ErrNoSpace; the old content is intact and
// no temporary file is left, for Write, UploadFiles (through the helper or
// Docker's archive API) and Edit.
func TestDiskFull(t *testing.T) {
	testenv.RequireDocker(t, "a small disk is a sized tmpfs (WithContainerConfig); a pod's emptyDir sizeLimit evicts the pod, it does not say ENOSPC")
	skipInShort(t)
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, scratch(t, "2m", 2<<20))
	ctx := testCtx(t)
	const original = "original content\n"
	require.NoError(t, sb.Write(ctx, "f.txt", []byte(original)))
	intact := func(what string) {
		t.Helper()
		page, err := sb.Read(ctx, "f.txt")
		require.NoError(t, err, what)
		assert.Equal(t, strings.TrimSuffix(original, "\n"), page.Content, "%s: the old content is intact", what)
		assert.Equal(t, []string{"/workspace/f.txt"}, lsPaths(t, sb, "/workspace"), "%s: no temporary file is left", what)
	}
	big := make([]byte, 3<<20)

	err := sb.Write(ctx, "f.txt", big)
	require.ErrorIs(t, err, sandbox.ErrNoSpace)
	intact("write")

	up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "f.txt", Content: big}})
	require.NoError(t, err)
	require.ErrorIs(t, up[0].Err, sandbox.ErrNoSpace, "upload through the archive API")
	intact("large upload")

	// Fill most of the disk, so that a small upload (through the helper) fails too.
	require.NoError(t, sb.Write(ctx, "/workspace/filler", make([]byte, 1500<<10)))
	up, err = sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "f.txt", Content: make([]byte, 800<<10)}})
	require.NoError(t, err)
	require.ErrorIs(t, up[0].Err, sandbox.ErrNoSpace, "upload through the helper")
	require.NoError(t, sb.Delete(ctx, "/workspace/filler"))
	intact("small upload")

	// An edit that grows the file past the free space.
	require.NoError(t, sb.Write(ctx, "/workspace/filler", make([]byte, 1200<<10)))
	_, err = sb.Edit(ctx, "f.txt", "content", strings.Repeat("much more content ", 50000), false)
	require.ErrorIs(t, err, sandbox.ErrNoSpace)
	require.NoError(t, sb.Delete(ctx, "/workspace/filler"))
	intact("edit")

	assert.Equal(t, "ok", mustSh(t, sb, "echo ok"), "the sandbox survives")
}

// A fork bomb under a pids limit returns (it fails, or its timeout kills
// it) and the sandbox works afterwards, with no bomb process left.
func TestForkBomb(t *testing.T) {
	testenv.RequireDocker(t, "a pod has no pids limit of its own (WithPidsLimit is the kubelet's podPidsLimit, unlimited on the test cluster): the bomb would reach the shared host")
	t.Parallel()
	for _, bomb := range []struct{ name, image, command string }{
		// Every shell process forks and exits: the bomb fails, then dies out.
		{"classic", testenv.BusyboxImage, ":(){ :|:& };:"},
		// Every process keeps forking, whatever fails: only the timeout ends it.
		{"persistent", testenv.DebianImage, "python3 -c '\nimport os, time\nwhile True:\n  try: os.fork()\n  except OSError: time.sleep(0.01)'"},
	} {
		t.Run(bomb.name, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, bomb.image, sandbox.WithPidsLimit(64))
			ctx := testCtx(t)
			r := within(t, async2(func() (sandbox.ExecuteResponse, error) {
				return sb.Execute(ctx, bomb.command, sandbox.ExecTimeout(3*time.Second))
			}), "the fork bomb")
			t.Logf("exit %d, timed out %v, error %v", r.v.ExitCode, r.v.TimedOut, r.err)
			require.NoError(t, r.err)
			assert.NotEqual(t, 0, r.v.ExitCode)
			if bomb.name == "persistent" {
				assert.True(t, r.v.TimedOut)
			}
			// What is left is killed or dies out, and reaped by the helper.
			var procs string
			require.Eventually(t, func() bool {
				res, err := sb.Execute(ctx, "ls /proc | grep -c '^[0-9]'")
				procs = fmt.Sprint(res.Output, err)
				n, cerr := strconv.Atoi(strings.TrimSpace(res.Output))
				return err == nil && cerr == nil && n <= 7 // the helpers (init, serve, its spare reaper), the reaper, sh, ls, grep
			}, noHang, 200*time.Millisecond, "processes left after the fork bomb: %s", procs)
			assert.Equal(t, "ok", mustSh(t, sb, "echo ok"))
		})
	}
}

// A daemon socket that is missing, refuses connections, or accepts and
// never answers fails New with ErrDaemonUnreachable, promptly.
func TestDaemonSocketRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	// A socket file nobody listens on.
	refused := filepath.Join(dir, "refused.sock")
	l, err := net.Listen("unix", refused)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())

	// A socket that accepts and never answers.
	silent := filepath.Join(dir, "silent.sock")
	sl, err := net.Listen("unix", silent)
	require.NoError(t, err)
	t.Cleanup(func() { sl.Close() })
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()

	for name, host := range map[string]string{
		"missing":      "unix://" + filepath.Join(dir, "missing.sock"),
		"refused":      "unix://" + refused,
		"not a socket": "unix://" + dir,
		"tcp refused":  "tcp://127.0.0.1:1",
		"silent":       "unix://" + silent,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			_, err := sandbox.New(ctx, sandbox.WithImage(testenv.BusyboxImage), sandbox.WithClientOptions(client.WithHost(host)))
			assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable)
			assert.NotErrorIs(t, err, fs.ErrNotExist, "an error about the daemon, not a file")
			assert.Less(t, time.Since(start), noHang)
			_, err = sandbox.Attach(ctx, "any", sandbox.WithClientOptions(client.WithHost(host)))
			assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable, "Attach")
			_, err = sandbox.Prune(ctx, sandbox.Filter{All: true}, sandbox.WithClientOptions(client.WithHost(host)))
			assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable, "Prune")
		})
	}
}

// privateDaemon is a dockerd of the test's own, with its own data, exec
// root and socket, so that a test can stop and restart it (or prune
// everything on it) without touching the daemon the other tests use.
type privateDaemon struct {
	t    *testing.T
	dir  string
	host string // unix://<dir>/docker.sock
	cmd  *exec.Cmd
	exit chan error // the running dockerd's exit
	cli  *client.Client
	args []string // more dockerd flags
}

// startPrivateDaemon starts a private dockerd (with the more flags args)
// with the busybox test image loaded, and stops and removes it all when the test ends. It skips the
// test when the process is not root or dockerd is not installed: both are
// needed to run a daemon.
func startPrivateDaemon(t *testing.T, args ...string) *privateDaemon {
	t.Helper()
	testenv.RequireDocker(t, "a private dockerd (frozen, restarted or killed) is the test's subject")
	if os.Geteuid() != 0 {
		t.Skip("a private dockerd needs root")
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Skip("a private dockerd needs the dockerd binary in PATH")
	}
	dir, err := os.MkdirTemp("", "dsb-dockerd-") // short: a socket path has ~100 bytes
	require.NoError(t, err)
	d := &privateDaemon{t: t, dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock"), args: args}
	t.Cleanup(d.destroy)
	d.start()
	cli, err := client.New(client.WithHost(d.host))
	require.NoError(t, err)
	d.cli = cli
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, testenv.EnsureBusybox(ctx, cli))
	return d
}

// start runs dockerd and waits until it answers.
func (d *privateDaemon) start() {
	t := d.t
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(d.dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer logf.Close()
	d.cmd = exec.Command("dockerd",
		"--data-root", filepath.Join(d.dir, "data"),
		"--exec-root", filepath.Join(d.dir, "exec"),
		"--pidfile", filepath.Join(d.dir, "docker.pid"),
		"-H", d.host,
		"--bridge=none", "--iptables=false", "--ip-masq=false",
		"--containerd-namespace", "dsb-test", "--containerd-plugins-namespace", "dsb-test-plugins",
	)
	d.cmd.Args = append(d.cmd.Args, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig: syscall.SIGTERM, // never outlive the test binary
		// A network namespace of its own: a dockerd with --bridge=none
		// deletes the host's docker0 at start, breaking the main daemon's
		// default network. Its socket, a path, stays reachable.
		Cloneflags: syscall.CLONE_NEWNET,
	}
	require.NoError(t, d.cmd.Start())
	d.exit = make(chan error, 1)
	go func(cmd *exec.Cmd, exit chan error) { exit <- cmd.Wait() }(d.cmd, d.exit)

	cli, err := client.New(client.WithHost(d.host))
	require.NoError(t, err)
	defer cli.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
		if err == nil {
			return
		}
		select {
		case werr := <-d.exit:
			d.cmd = nil
			t.Fatalf("private dockerd exited at start (%v):\n%s", werr, d.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("private dockerd did not answer within a minute: %v\n%s", err, d.logTail())
		}
	}
}

// stop sends SIGTERM to dockerd and waits for it to exit (SIGKILL after 30 s).
func (d *privateDaemon) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exit:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exit
		d.t.Errorf("private dockerd ignored SIGTERM for 30 s:\n%s", d.logTail())
	}
	d.cmd = nil
}

// destroy stops the daemon and its containerd, unmounts what they left
// mounted and removes every file.
func (d *privateDaemon) destroy() {
	if d.cli != nil {
		d.cli.Close()
	}
	d.stop()
	// A containerd that outlived its dockerd (it should not).
	if b, err := os.ReadFile(filepath.Join(d.dir, "exec", "containerd", "containerd.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := testenv.UnmountBelow(d.dir); err != nil {
		d.t.Errorf("unmount the private daemon's mounts: %v", err)
	}
	if err := os.RemoveAll(d.dir); err != nil {
		d.t.Errorf("remove the private daemon's files: %v", err)
	}
}

func (d *privateDaemon) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "dockerd.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
