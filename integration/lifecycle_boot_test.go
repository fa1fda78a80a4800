package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hasPortSocket reports whether sb's container shares a port socket with
// the library: a local engine. Only such a sandbox boots.
func hasPortSocket(t *testing.T, sb *sandbox.Sandbox) bool {
	t.Helper()
	return mustSh(t, sb, "test -S /run/dockersandbox/ports.sock && echo yes || echo no") == "yes"
}

// entrypoint is the container's entrypoint, as the daemon keeps it.
func entrypoint(t *testing.T, sb *sandbox.Sandbox) []string {
	t.Helper()
	res, err := testenv.Client(t).ContainerInspect(testCtx(t), sb.ID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	return res.Container.Config.Entrypoint
}

// A root sandbox on a writable root filesystem, with a port socket, boots:
// its PID 1 is the shared read-only copy of the helper, which installs the
// helper at its usual path and becomes it (same argv, same file, same
// modes as the archive copy made); the lifetimes read from the
// configuration, an Attach and a restart (which boots again) work. Another
// user, and the secure profile's read-only root, are copied into as before.
func TestBoot(t *testing.T) {
	testenv.RequireDocker(t, "reads the container's configuration")
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		if !hasPortSocket(t, sb) {
			t.Skip("no port socket (the engine is not on this machine): nothing boots")
		}
		ep := entrypoint(t, sb)
		if secure {
			assert.Equal(t, []string{"/.dockersandbox/sandbox-helper", "init", "-lifetime", "1h0m0s"}, ep, "a read-only root is copied into")
		} else {
			require.Len(t, ep, 7)
			assert.Equal(t, []string{"/run/dockersandbox/sandbox-helper", "boot", "/.dockersandbox/sandbox-helper"}, ep[:3])
			assert.Equal(t, sb.WorkingDir(), ep[3])
			assert.Equal(t, []string{"init", "-lifetime", "1h0m0s"}, ep[4:])
			assert.Equal(t, "yes", mustSh(t, sb, "cmp /run/dockersandbox/sandbox-helper /.dockersandbox/sandbox-helper && echo yes"))
			out, err := sb.Execute(ctx, "touch /run/dockersandbox/sandbox-helper || cp /bin/sh /run/dockersandbox/sandbox-helper || rm /run/dockersandbox/sandbox-helper")
			require.NoError(t, err)
			assert.NotZero(t, out.ExitCode, "root changed the shared helper: %s", out.Output)
		}
		assert.Equal(t, "first", testhook.ChannelKind(sb), "the shared channel is PID 1's connection")
		assert.Equal(t, "/.dockersandbox/sandbox-helper init -lifetime 1h0m0s ", mustSh(t, sb, "tr '\\0' ' ' < /proc/1/cmdline; echo"))
		if !secure {
			assert.Equal(t, "755 0 0 directory\n755 0 0 regular file\n700 0 0 directory",
				mustSh(t, sb, "stat -c '%a %u %g %F' /.dockersandbox /.dockersandbox/sandbox-helper /.dockersandbox/run"))
			assert.Equal(t, "run\nsandbox-helper", mustSh(t, sb, "ls -A /.dockersandbox"), "nothing left of the install")
		}
		l, err := sb.Lifetimes(ctx)
		require.NoError(t, err)
		assert.Equal(t, time.Hour, l.Lifetime)

		again, err := sandbox.Attach(ctx, sb.ID(), onEngine()...)
		require.NoError(t, err)
		assert.Equal(t, "hi", mustSh(t, again, "echo hi"))
		again.Detach()
	}, sandbox.WithLifetime(time.Hour))

	t.Run("restart", func(t *testing.T) {
		t.Parallel()
		requireStopper(t)
		ctx := testCtx(t)
		sb := newSandbox(t, testenv.BusyboxImage)
		if !hasPortSocket(t, sb) {
			t.Skip("no port socket (the engine is not on this machine): nothing boots")
		}
		require.NoError(t, sb.Stop(ctx))
		require.NoError(t, sb.Restart(ctx))
		assert.Equal(t, "/.dockersandbox/sandbox-helper init ", mustSh(t, sb, "tr '\\0' ' ' < /proc/1/cmdline; echo"))
		assert.Equal(t, "socket", testhook.ChannelKind(sb), "after a restart, the shared channel is an exec's connection to the port socket")
	})

	t.Run("another user", func(t *testing.T) {
		t.Parallel()
		sb := newSandbox(t, testenv.DebianImage, sandboxUser())
		if !hasPortSocket(t, sb) {
			t.Skip("no port socket (the engine is not on this machine)")
		}
		ep := entrypoint(t, sb)
		require.NotEmpty(t, ep)
		assert.Equal(t, "/.dockersandbox/sandbox-helper", ep[0], "only root boots")
		assert.NotEqual(t, "0", mustSh(t, sb, "id -u"))
		assert.Equal(t, "/.dockersandbox/sandbox-helper init ", mustSh(t, sb, "tr '\\0' ' ' < /proc/1/cmdline; echo"))
		assert.Equal(t, "first", testhook.ChannelKind(sb), "the first channel for any user")
	})
}

// A boot that fails (the image's helper directory is a file: a snapshot
// of a sandbox whose root made it one) fails New with what PID 1 wrote,
// and leaves no container.
func TestBootFailure(t *testing.T) {
	testenv.RequireDocker(t, "commits an image")
	if secure {
		t.Skip("a read-only root does not boot")
	}
	ctx := testCtx(t)
	sb := newSandbox(t, testenv.BusyboxImage)
	if !hasPortSocket(t, sb) {
		t.Skip("no port socket (the engine is not on this machine): nothing boots")
	}
	mustSh(t, sb, "rm -rf /.dockersandbox && echo x > /.dockersandbox")
	snap, err := sb.Snapshot(ctx)
	require.NoError(t, err)
	removeSnapshot(t, snap)
	require.NoError(t, sb.Close())

	before := ours(t)
	bad, err := sandbox.New(ctx, sandboxOptions(snap.Ref)...)
	if err == nil {
		bad.Close()
	}
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "the helper did not start")
	assert.Contains(t, err.Error(), "not a directory")
	assert.Equal(t, before, ours(t), "the container is removed")
}

// sameAsExec is what a command sees of its process that could differ
// between a helper PID 1 started (the first channel) and one an exec
// started.
const sameAsExec = `id; umask; pwd; ulimit -a; env | sort
grep -E '^(SigIgn|SigBlk|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
cat /proc/self/oom_score_adj /proc/self/cgroup`

// A command on the first channel (its helper started by PID 1) sees what
// one on an exec's helper sees: user, umask, directory, limits,
// environment, signal dispositions, capabilities, no_new_privs, seccomp,
// OOM score and cgroups. The first channel's helper is then killed from
// inside, and the same script runs on the channel reopened by an exec.
func TestFirstChannelAsExec(t *testing.T) {
	testenv.RequireDocker(t, "PID 1's connection needs a port socket")
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		first := mustSh(t, sb, sameAsExec)
		if testhook.ChannelKind(sb) != "first" {
			t.Skip("no first channel here (no port socket)")
		}
		killChannelHelper(t, sb)
		var again string
		require.Eventually(t, func() bool {
			res, err := sb.Execute(ctx, sameAsExec)
			again = res.Output
			return err == nil && testhook.ChannelKind(sb) == "socket"
		}, 30*time.Second, 100*time.Millisecond, "the channel reopens on an exec")
		if testenv.Podman(t) {
			// Podman's exec leaves HOSTNAME out of the environment; its
			// PID 1 has it.
			first = dropLine(first, "HOSTNAME=")
		}
		assert.Equal(t, first, strings.TrimSuffix(again, "\n"))
	})
}

// dropLine drops the lines of s that start with prefix.
func dropLine(s, prefix string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// killChannelHelper kills the shared channel's helper from a command on an
// exec of its own (its own standard input), as the sandbox's user, who
// runs it (root without capabilities could not, under the secure profile).
func killChannelHelper(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	c := sb.Command(testCtx(t), `n=0; for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^/.dockersandbox/sandbox-helper serve ' && kill -9 ${p#/proc/} && n=$((n+1)); done; echo $n`)
	c.Stdin = strings.NewReader("")
	out, err := c.Output()
	require.NoError(t, err)
	require.Equal(t, "1\n", string(out), "the channel's helper killed")
}
