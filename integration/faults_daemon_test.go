//go:build linux

package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"context"
	"errors"
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

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The daemon stops and restarts under a sandbox: calls in flight and calls
// while it is down fail clearly and promptly; after the restart the
// sandbox's container is gone (it died with the daemon), which the next
// call says; Close works.
func TestDaemonRestart(t *testing.T) {
	t.Parallel()
	d := startPrivateDaemon(t)
	ctx := testCtx(t)
	sb := d.newSandbox(t, ctx)
	require.NoError(t, sb.Write(ctx, "kept.txt", []byte("before")))
	long := startLong(t, sb)
	shared := async(func() error { _, err := sb.Execute(ctx, "sleep 1001", sandbox.ExecTimeout(0)); return err })
	// The daemon stops once the shared channel's command runs: one still
	// on its way (the channel's exec not yet made, on a busy machine)
	// would meet the stopped daemon instead, which is another case.
	require.Eventually(t, func() bool {
		res, err := sb.Execute(ctx, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
		return err == nil && strings.Contains(res.Output, "sleep 1001")
	}, noHang, 50*time.Millisecond, "the shared channel's command did not start")

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

// newSandbox makes a busybox sandbox without network on d, which the
// test closes at its end.
func (d *privateDaemon) newSandbox(t *testing.T, ctx context.Context) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage,
		sandbox.WithClientOptions(client.WithHost(d.host)), sandbox.WithNetworkMode("none"))...)
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close() })
	return sb
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
