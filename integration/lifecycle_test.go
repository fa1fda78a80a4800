package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ours counts the containers this test process created that still exist.
// A test that counts them (or kills them all, as TestPool does) does not
// call t.Parallel: it runs before the parallel tests, alone.
func ours(t *testing.T) int {
	t.Helper()
	return len(testenv.Owned(t))
}

func TestNewAndClose(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithLabels(map[string]string{"team": "agents"}), sandbox.WithEnv("GREETING=hi"))...)
	require.NoError(t, err)
	assert.Len(t, sb.ID(), 12)

	info, err := inspectBox(t, sb.ID())
	require.NoError(t, err)
	labels := info.Labels
	assert.Equal(t, "true", labels[sandbox.LabelSandbox])
	assert.Equal(t, testenv.Owner(), labels[sandbox.LabelOwner])
	created, err := time.Parse(time.RFC3339, labels[sandbox.LabelCreated])
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), created, time.Minute)
	assert.Equal(t, "agents", labels["team"])

	resp, err := sb.Execute(ctx, "echo $GREETING; cat /proc/1/cmdline | tr '\\0' ' '")
	require.NoError(t, err)
	assert.Equal(t, "hi\n/.dockersandbox/sandbox-helper init ", resp.Output)

	require.NoError(t, sb.Close())
	require.NoError(t, sb.Close(), "Close is idempotent")
	_, err = inspectBox(t, sb.ID())
	assert.ErrorIs(t, err, engine.ErrNotFound, "the container is removed")
	_, err = sb.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrClosed)
	_, err = sb.Read(ctx, "/etc/passwd")
	assert.ErrorIs(t, err, sandbox.ErrClosed)
}

func TestCloseWithoutAutoRemove(t *testing.T) {
	requireStopper(t) // Close without auto-remove stops the sandbox, keeping it
	ctx := testCtx(t)
	name := fmt.Sprintf("sandbox-test-keep-%d", time.Now().UnixNano())
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithAutoRemove(false), sandbox.WithName(name))...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, removeBox(t, name)) })
	require.NoError(t, sb.Close())
	info, err := inspectBox(t, name)
	require.NoError(t, err, "the container is kept")
	assert.NotEqual(t, engine.StateRunning, info.State)
	assert.Equal(t, 0, info.ExitCode, "the helper exits cleanly on SIGTERM")

	// The name is taken now: a second sandbox with it fails, leaving nothing.
	before := ours(t)
	_, err = sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithName(name))...)
	assert.Error(t, err)
	assert.Equal(t, before, ours(t))
}

func TestCloseAfterRemovedOutside(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage)...)
	require.NoError(t, err)
	require.NoError(t, removeBox(t, sb.ID()))
	_, err = sb.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrGone)
	assert.NoError(t, sb.Close())
}

// TestOptionsApply: an option given to a call it does not apply to is
// ErrInvalidOption naming the option and the call, before any engine is
// reached, so it runs without one.
func TestOptionsApply(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Should a check miss, the calls find nothing to act on: an image
	// that is not there, never pulled, and an owner nobody has.
	none := []sandbox.Option{sandbox.WithImage("dockersandbox-test/none:0"), sandbox.WithPullPolicy(sandbox.PullNever)}
	nobody := sandbox.Filter{Owner: "dockersandbox-test-nobody"}
	for _, c := range []struct {
		name, want string
		call       func() error
	}{
		{"New WithStart", "WithStart does not apply to New", func() error {
			_, err := sandbox.New(ctx, append(none, sandbox.WithStart())...)
			return err
		}},
		{"Attach WithImage", "WithImage does not apply to Attach", func() error {
			_, err := sandbox.Attach(ctx, "dockersandbox-test-nothing", sandbox.WithImage("busybox"))
			return err
		}},
		{"Attach WithSecureProfile", "WithSecureProfile does not apply to Attach", func() error {
			_, err := sandbox.Attach(ctx, "dockersandbox-test-nothing", sandbox.WithSecureProfile())
			return err
		}},
		{"List WithOwner", "WithOwner does not apply to List", func() error {
			_, err := sandbox.List(ctx, nobody, sandbox.WithOwner("x"))
			return err
		}},
		{"Prune WithImage", "WithImage does not apply to Prune", func() error {
			_, err := sandbox.Prune(ctx, nobody, sandbox.WithImage("busybox"))
			return err
		}},
		{"ListSnapshots WithMemory", "WithMemory does not apply to ListSnapshots", func() error {
			_, err := sandbox.ListSnapshots(ctx, nobody, sandbox.WithMemory(1<<30))
			return err
		}},
		{"LookupSnapshot WithStart", "WithStart does not apply to LookupSnapshot", func() error {
			_, err := sandbox.LookupSnapshot(ctx, "dockersandbox-test/none:0", sandbox.WithStart())
			return err
		}},
		{"PruneSnapshots WithAutoRemove", "WithAutoRemove does not apply to PruneSnapshots", func() error {
			_, err := sandbox.PruneSnapshots(ctx, nobody, sandbox.WithAutoRemove(false))
			return err
		}},
		{"Pool WithStart", "WithStart does not apply to New", func() error {
			_, err := sandbox.NewPool(ctx, sandbox.PoolSize(1), sandbox.PoolSandboxOptions(append(none, sandbox.WithStart())...))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			require.ErrorIs(t, err, sandbox.ErrInvalidOption)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	ctx := testCtx(t)
	before := ours(t)
	bad := map[string]sandbox.Option{
		"empty image":      sandbox.WithImage(""),
		"bad name":         sandbox.WithName("-x"),
		"bad volume":       sandbox.WithVolumes("/only-one-part"),
		"relative workdir": sandbox.WithWorkingDir("work"),
		"negative timeout": sandbox.WithExecuteTimeout(-time.Second),
		"zero output":      sandbox.WithMaxOutputBytes(0),
		"empty network":    sandbox.WithNetworkMode(" "),
		"bad dns":          sandbox.WithDNS("not-an-ip"),
		"bad gpus":         sandbox.WithGPUs("some"),
		"bad env":          sandbox.WithEnv("NOEQUALS"),
		"reserved label":   sandbox.WithLabels(map[string]string{sandbox.LabelOwner: "x"}),
		"empty user":       sandbox.WithUser(""),
		"tiny memory":      sandbox.WithMemory(1024),
		"zero cpus":        sandbox.WithCPUs(0),
		"zero pids":        sandbox.WithPidsLimit(0),
		"negative shm":     sandbox.WithShmSize(-1),
		"bad device":       sandbox.WithDevices("relative"),
		"bad device perms": sandbox.WithDevices("/dev/null:/dev/null:x"),
		"soft above hard":  sandbox.WithUlimits(sandbox.Ulimit{Name: "nofile", Soft: 10, Hard: 5}),
		"unlimited soft":   sandbox.WithUlimits(sandbox.Ulimit{Name: "nofile", Soft: -1, Hard: 5}),
		"unknown ulimit":   sandbox.WithUlimits(sandbox.Ulimit{Name: "nofiles", Soft: 1, Hard: 1}),
		"ulimit as":        sandbox.WithUlimits(sandbox.Ulimit{Name: "as", Soft: 1, Hard: 1}),
		"empty cap":        sandbox.WithCapDrop(""),
		"empty runtime":    sandbox.WithRuntime(""),
		"bad pull policy":  sandbox.WithPullPolicy(sandbox.PullPolicy(9)),
		"nil config":       sandbox.WithContainerConfig(nil),
		"nil client":       sandbox.WithClient(nil),
	}
	for name, opt := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := sandbox.New(ctx, onEngine(sandbox.WithImage(testenv.BusyboxImage), opt)...)
			assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
		})
	}
	if !testenv.Relayed() {
		_, err := sandbox.New(ctx, sandbox.WithClient(testenv.Client(t)), sandbox.WithClientOptions(client.WithTimeout(time.Second)))
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "conflicting client options")
		// gVisor counts its own threads against the limit: a low one
		// would end the sandbox.
		_, err = sandbox.New(ctx, onEngine(sandbox.WithImage(testenv.BusyboxImage), sandbox.WithRuntime("runsc"), sandbox.WithPidsLimit(32))...)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "a pids limit too low for gVisor")
		// gVisor chosen, or its pids limit set, behind WithRuntime's back
		// would escape what New does under gVisor.
		_, err = sandbox.New(ctx, onEngine(sandbox.WithImage(testenv.BusyboxImage), sandbox.WithContainerConfig(func(_ *container.Config, h *container.HostConfig) {
			h.Runtime = "runsc"
		}))...)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "gVisor from WithContainerConfig")
		assert.ErrorContains(t, err, "WithRuntime")
		_, err = sandbox.New(ctx, onEngine(sandbox.WithImage(testenv.BusyboxImage), sandbox.WithRuntime("runsc"), sandbox.WithContainerConfig(func(_ *container.Config, h *container.HostConfig) {
			limit := int64(32)
			h.PidsLimit = &limit
		}))...)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "a pids limit too low for gVisor from WithContainerConfig")
		assert.ErrorContains(t, err, "gVisor")
		if !testenv.Podman(t) {
			// A runtime Docker does not have: refused by the daemon, and
			// said as an invalid option.
			_, err = sandbox.New(ctx, onEngine(sandbox.WithImage(testenv.BusyboxImage), sandbox.WithPullPolicy(sandbox.PullNever), sandbox.WithRuntime("dockersandbox-no-such-runtime"))...)
			assert.ErrorIs(t, err, sandbox.ErrInvalidOption, "an unknown runtime")
			assert.ErrorContains(t, err, "register runsc")
		}
	}
	assert.Equal(t, before, ours(t), "no container was created")
}

func TestImageNotFound(t *testing.T) {
	testenv.RequireDocker(t, "pull policies and pull progress are Docker's options; a missing image on Kubernetes is k8s.ErrPodFailed (k8s TestCreateFailsFast)")
	ctx := testCtx(t)
	before := ours(t)
	_, err := sandbox.New(ctx, sandbox.WithImage("dockersandbox-test/no-such-image:1"), sandbox.WithPullPolicy(sandbox.PullNever))
	assert.ErrorIs(t, err, sandbox.ErrImageNotFound)
	// The default policy tries to pull; no registry answers here, so it fails clearly.
	var progress strings.Builder
	_, err = sandbox.New(ctx, sandbox.WithImage("dockersandbox-test/no-such-image:1"), sandbox.WithPullProgress(&progress))
	assert.ErrorIs(t, err, sandbox.ErrImageNotFound)
	assert.Equal(t, before, ours(t))
}

func TestDaemonUnreachable(t *testing.T) {
	testenv.RequireDocker(t, "WithClientOptions points at a Docker daemon; the Kubernetes engine's is k8s TestUnreachable")
	t.Parallel()
	ctx := testCtx(t)
	_, err := sandbox.New(ctx, sandbox.WithImage(testenv.BusyboxImage),
		sandbox.WithClientOptions(client.WithHost("unix:///nonexistent/docker.sock")))
	assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable)
}

func TestStartFailureRemovesContainer(t *testing.T) {
	testenv.RequireDocker(t, "WithDevices and WithGPUs are Docker's options (refused on other engines, TestWithEngineRefusals)")
	ctx := testCtx(t)
	before := ours(t)
	// A device that does not exist: Docker fails at start, after create;
	// whichever step fails, nothing is left.
	_, err := sandbox.New(ctx, sandbox.WithImage(testenv.BusyboxImage), sandbox.WithPullPolicy(sandbox.PullNever),
		sandbox.WithDevices("/dev/dockersandbox-no-such-device"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dockersandbox-no-such-device")
	assert.Equal(t, before, ours(t))
	if testenv.Podman(t) {
		return // Podman ignores GPU requests it cannot serve
	}
	// No NVIDIA runtime here: start fails, and the created container goes.
	_, err = sandbox.New(ctx, sandbox.WithImage(testenv.BusyboxImage), sandbox.WithPullPolicy(sandbox.PullNever), sandbox.WithGPUs("all"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start container")
	assert.Equal(t, before, ours(t))
}

func TestContainerOptions(t *testing.T) {
	testenv.RequireDocker(t, "Docker's container options (WithShmSize, WithUlimits, WithDNS, WithDevices, WithContainerConfig) and its HostConfig")
	t.Parallel()
	ctx := testCtx(t)
	sb := newSandbox(t, testenv.BusyboxImage,
		sandbox.WithUser("sandbox"),
		sandbox.WithWorkingDir("/home/sandbox/work"),
		sandbox.WithMemory(64<<20),
		sandbox.WithCPUs(0.5),
		sandbox.WithPidsLimit(100),
		sandbox.WithShmSize(8<<20),
		// nproc too: Podman's default nproc may exceed what the host allows.
		sandbox.WithUlimits(sandbox.Ulimit{Name: "nofile", Soft: 256, Hard: 512}, sandbox.Ulimit{Name: "nproc", Soft: 1024, Hard: 1024}),
		sandbox.WithCapDrop("NET_RAW"),
		sandbox.WithNetworkMode("none"),
		sandbox.WithDNS("10.0.0.53"),
		sandbox.WithDevices("/dev/null:/dev/extra-null:rw"),
		sandbox.WithContainerConfig(func(cfg *container.Config, host *container.HostConfig) {
			cfg.Hostname = "agent-box"
		}),
	)
	resp, err := sb.Execute(ctx, strings.Join([]string{
		"id -u", "pwd", "touch ok && echo writable", "ulimit -Hn", "hostname",
		"cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max",
		"df -k /dev/shm | tail -1 | awk '{print $2}'", "test -c /dev/extra-null && echo device",
		"grep -c nameserver /etc/resolv.conf", "ls /sys/class/net",
	}, "; "))
	require.NoError(t, err)
	dns := "1\n"
	if testenv.Podman(t) {
		dns = "grep: /etc/resolv.conf: No such file or directory\n" // Podman writes none without a network
	}
	pids, net := "100\n", "lo\n"
	if sandboxtest.GVisor() {
		// gVisor's own cgroupfs and sysfs: the pids limit holds the
		// sandbox's host threads, and there is no /sys/class/net.
		pids, net = "max\n", "ls: /sys/class/net: No such file or directory\n"
	}
	assert.Equal(t, "1000\n/home/sandbox/work\nwritable\n512\nagent-box\n"+pids+"8192\ndevice\n"+dns+net, resp.Output)

	cli := testenv.Client(t)
	info, err := cli.ContainerInspect(ctx, sb.ID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), info.Container.HostConfig.Memory)
	assert.Equal(t, int64(5e8), info.Container.HostConfig.NanoCPUs)
	var dropped []string
	for _, c := range info.Container.HostConfig.CapDrop {
		dropped = append(dropped, strings.TrimPrefix(c, "CAP_")) // Podman omits the prefix
	}
	want := []string{"NET_RAW"}
	if secure {
		want = []string{"ALL", "NET_RAW"}
	}
	assert.ElementsMatch(t, want, dropped)
}

func TestReadOnlyRootfs(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	opts := []sandbox.Option{sandbox.WithReadOnlyRootfs(true)}
	if !testenv.Relayed() { // elsewhere the working directory is the engine's volume (an emptyDir on Kubernetes)
		opts = append(opts, sandbox.WithContainerConfig(func(_ *container.Config, host *container.HostConfig) {
			host.Tmpfs = map[string]string{"/workspace": "exec"}
		}))
	}
	sb := newSandbox(t, testenv.BusyboxImage, opts...)
	resp, err := sb.Execute(ctx, "touch /etc/x 2>&1; echo $?; echo hi > f && cat f")
	require.NoError(t, err)
	assert.Contains(t, resp.Output, "Read-only file system")
	assert.True(t, strings.HasSuffix(resp.Output, "1\nhi\n"), resp.Output)
	require.NoError(t, sb.Write(ctx, "g.txt", []byte("written")))
	page, err := sb.Read(ctx, "g.txt")
	require.NoError(t, err)
	assert.Equal(t, "written", page.Content)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for i := range 30 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			resp, err := sb.Execute(ctx, fmt.Sprintf("echo %d", i))
			if err == nil && resp.Output != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("execute %d: got %q", i, resp.Output)
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("c/%d.txt", i)
			err := sb.Write(ctx, p, []byte(p))
			if err == nil {
				var page sandbox.ReadResult
				page, err = sb.Read(ctx, p)
				if err == nil && page.Content != p {
					err = fmt.Errorf("read %s: got %q", p, page.Content)
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	entries, err := sb.Ls(ctx, "c")
	require.NoError(t, err)
	assert.Len(t, entries, 30)
}

func TestSeveralSandboxes(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var wg sync.WaitGroup
	ids := make([]string, 4)
	errs := make([]error, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage)...)
			if err != nil {
				errs[i] = err
				return
			}
			defer func() { errs[i] = errorsJoin(errs[i], sb.Close()) }()
			if err := sb.Write(ctx, "/tmp/me", []byte(sb.ID())); err != nil {
				errs[i] = err
				return
			}
			resp, err := sb.Execute(ctx, "cat /tmp/me")
			if err == nil && resp.Output != sb.ID() {
				err = fmt.Errorf("sandbox %s sees %q", sb.ID(), resp.Output)
			}
			ids[i], errs[i] = sb.ID(), err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, uniq(ids), 4)
}
