//go:build linux

package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashEnv makes the test binary, re-run by a test, act as a host process
// that dies inside New (see TestHelperProcessCrashInNew).
const crashEnv = "DOCKERSANDBOX_TEST_CRASH"

// TestHelperProcessCrashInNew is not a test: run by startCrashChild as a
// child process, it makes a sandbox with a lifetime and an idle timeout
// (with New, or in a Pool's refill, as the environment says), stops right
// after ContainerCreate, prints the container's ID and READY, and waits to
// be killed: the container stays "created", its helper never started.
func TestHelperProcessCrashInNew(t *testing.T) {
	mode := os.Getenv(crashEnv)
	if mode == "" {
		t.Skip("run as a child process by TestCrashInsideNew")
	}
	testhook.SetAfterCreate(func(id string) {
		fmt.Println("ID", id[:12])
		fmt.Println("READY")
		time.Sleep(time.Hour)
	})
	opts := sandboxOptions(testenv.BusyboxImage, sandbox.WithLifetime(5*time.Second), sandbox.WithIdleTimeout(2*time.Second), sandbox.WithNetworkMode("none"))
	ctx := context.Background()
	switch mode {
	case "new":
		_, err := sandbox.New(ctx, opts...)
		fmt.Println("ERROR New returned", err)
	case "pool":
		_, err := sandbox.NewPool(ctx, sandbox.PoolSize(1), sandbox.PoolSandboxOptions(opts...))
		if err != nil {
			fmt.Println("ERROR", err)
		}
		time.Sleep(time.Hour)
	}
	os.Exit(1)
}

// startCrashChild runs TestHelperProcessCrashInNew with mode and the extra
// environment, and returns its container's ID once it stopped inside New.
func startCrashChild(t *testing.T, mode string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessCrashInNew$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(append(os.Environ(), crashEnv+"="+mode), env...)
	stderr := newSignalWriter("\x00") // a locked buffer: never signals
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		id := ""
		for sc.Scan() {
			fmt.Fprintln(stderr, sc.Text())
			if v, ok := strings.CutPrefix(sc.Text(), "ID "); ok {
				id = v
			}
			if sc.Text() == "READY" {
				ready <- id
			}
		}
		close(ready)
	}()
	select {
	case id, ok := <-ready:
		require.True(t, ok, "the child process ended before it was ready:\n%s", stderr.text())
		require.NotEmpty(t, id)
		return cmd, id
	case <-time.After(2 * time.Minute):
		t.Fatalf("the child process did not get ready:\n%s", stderr.text())
		panic("unreachable")
	}
}

// state returns the container's state, "" once it no longer exists.
func state(t *testing.T, cli *client.Client, id string) container.ContainerState {
	t.Helper()
	info, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such container") {
		return ""
	}
	require.NoError(t, err)
	return info.Container.State.Status
}

// A host process killed inside New, after ContainerCreate and before the
// start, leaves a container that its helper (which enforces the lifetime
// and idle timeout) never ran in. The next New on the daemon removes it
// (its owner is dead), in New and in a Pool's refill alike, and the port
// socket directory the process left; so does Prune(Filter{DeadOwners: true})
// (the container).
func TestCrashInsideNew(t *testing.T) {
	testenv.RequireDocker(t, "a container created and never started is Docker's two-step create (a pod is created running)")
	skipInShortOnDocker(t)
	t.Parallel()
	if testenv.Podman(t) && os.Geteuid() != 0 {
		t.Skip("rootless Podman: the child's pid is checked on this host all the same")
	}
	cli := testenv.Client(t)
	for _, mode := range []string{"new", "pool"} {
		t.Run(mode, func(t *testing.T) {
			cmd, id := startCrashChild(t, mode)
			t.Cleanup(func() {
				_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			})
			dir := portsDirOf(t, id)
			killChild(t, cmd)
			// Created, never started; or already being removed by the
			// sweep of another test's New on this shared daemon (what the
			// test is about: seen once in CI). Never running or exited.
			require.Contains(t, []container.ContainerState{container.StateCreated, container.StateRemoving, ""},
				state(t, cli, id), "created, never started")
			requirePortDirSwept(t, dir) // a New sweeps
			assert.Equal(t, container.ContainerState(""), state(t, cli, id), "the next New removed the abandoned container")
		})
	}

	t.Run("prune", func(t *testing.T) {
		// On a private daemon: on the shared one, any New (of another
		// test, or of another test run) may sweep it first.
		d := startPrivateDaemon(t)
		// The private daemon speaks plain HTTP on a unix socket: no TLS
		// settings of the engine under test (CI runs the suite over TLS too).
		cmd, id := startCrashChild(t, "new", "DOCKER_HOST="+d.host, "DOCKER_TLS_VERIFY=", "DOCKER_CERT_PATH=")
		killChild(t, cmd)
		require.Equal(t, container.StateCreated, state(t, d.cli, id))
		removed, err := sandbox.Prune(testCtx(t), sandbox.Filter{DeadOwners: true}, sandbox.WithClient(d.cli))
		require.NoError(t, err)
		assert.Equal(t, []string{id}, removed)
		assert.Equal(t, container.ContainerState(""), state(t, d.cli, id))
	})
}

// Prune(Filter{DeadOwners: true}) and New's sweep take a never-started sandbox as
// abandoned, whatever its owner, once it is older than AbandonedAfter (a
// process on another host that died inside New): a younger one, or a
// started one, of a live owner stays.
func TestAbandonedAfter(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	mk := func(age time.Duration, owner string) string {
		created, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: testenv.BusyboxImage, Cmd: []string{"true"}, Labels: map[string]string{
				sandbox.LabelSandbox: "true", sandbox.LabelOwner: owner,
				sandbox.LabelCreated: time.Now().Add(-age).UTC().Format(time.RFC3339),
			}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		require.NoError(t, err)
		return created.ID[:12]
	}
	old := mk(testhook.AbandonedAfter+time.Minute, "elsewhere:1")
	young := mk(time.Minute, "elsewhere:1")
	mine := mk(testhook.AbandonedAfter+time.Minute, testenv.Owner())
	_, err := d.cli.ContainerStart(ctx, mine, client.ContainerStartOptions{})
	require.NoError(t, err)

	removed, err := sandbox.Prune(ctx, sandbox.Filter{DeadOwners: true}, sandbox.WithClient(d.cli))
	require.NoError(t, err)
	assert.Equal(t, []string{old}, removed)
	assert.Equal(t, container.StateCreated, state(t, d.cli, young))
	assert.NotEqual(t, container.ContainerState(""), state(t, d.cli, mine))
	_, err = sandbox.Prune(ctx, sandbox.Filter{All: true}, sandbox.WithClient(d.cli))
	require.NoError(t, err)
}

// An engine whose default ulimit is above what its host allows (Podman's
// default nofile near 1048576 where the host's hard limit is lower) makes
// the runtime refuse to start any container: New then sets that limit to
// this host's hard limit and succeeds. A limit the caller set too high
// fails with an error that says to lower it. A private dockerd with a
// default nofile above the kernel's nr_open plays the engine.
func TestEngineUlimitAboveHost(t *testing.T) {
	if sandboxtest.GVisor() {
		t.Skip("gVisor applies a sandbox's rlimits in its own kernel and refuses none above the host's: there is no refusal to recover from")
	}
	t.Parallel()
	d := startPrivateDaemon(t, "--default-ulimit", "nofile=2000000:2000000")
	ctx := testCtx(t)
	opts := sandboxOptions(testenv.BusyboxImage, sandbox.WithClient(d.cli), sandbox.WithNetworkMode("none"))
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))

	sb, err := sandbox.New(ctx, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close() })
	res, err := sb.Execute(ctx, "ulimit -n; ulimit -Hn")
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%d\n%d\n", lim.Max, lim.Max), res.Output, "this host's hard limit")
	require.NoError(t, sb.Close())

	_, err = sandbox.New(ctx, append(opts, sandbox.WithUlimits(sandbox.Ulimit{Name: "nofile", Soft: 2000000, Hard: 2000000}))...)
	require.Error(t, err)
	t.Logf("a caller's nofile too high: %v", err)
	assert.Contains(t, err.Error(), "ulimit nofile set for the sandbox is above what the engine's host allows")
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "nothing left behind")
}
