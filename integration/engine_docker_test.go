package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/engine/enginetest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerEngine returns the Docker engine of the test daemon, closed at the
// test's end.
func dockerEngine(t *testing.T) engine.Engine {
	t.Helper()
	e, err := sandbox.DockerEngine(testCtx(t))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestDockerEngineConformance runs the engine suite on the Docker engine.
func TestDockerEngineConformance(t *testing.T) {
	testenv.RequireDocker(t, "the Docker engine itself (the relayed engine passes enginetest in its own module)")
	t.Parallel()
	e := dockerEngine(t)
	for _, image := range images {
		t.Run(image, func(t *testing.T) { enginetest.Run(t, e, image) })
	}
}

// otherEngine hides the Docker engine behind an engine of another name,
// whose IDs are not Docker's ("other-" and the container's ID): New,
// Attach, List and Prune then take the engine-neutral path (a Spec and
// Create), as they do on Kubernetes; it can neither pause nor stop.
type otherEngine struct{ e engine.Engine }

const otherPrefix = "other-"

func (otherEngine) Name() string   { return "other" }
func (o otherEngine) Close() error { return o.e.Close() }

func (o otherEngine) Create(ctx context.Context, spec *engine.Spec) (engine.Info, error) {
	info, err := o.e.Create(ctx, spec)
	info.ID = otherPrefix + info.ID
	return info, err
}

func (o otherEngine) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	return o.e.Exec(ctx, strings.TrimPrefix(id, otherPrefix), argv, user)
}

func (o otherEngine) Inspect(ctx context.Context, id string) (engine.Info, error) {
	if !strings.HasPrefix(id, otherPrefix) {
		return engine.Info{}, engine.ErrNotFound
	}
	info, err := o.e.Inspect(ctx, strings.TrimPrefix(id, otherPrefix))
	info.ID = otherPrefix + info.ID
	return info, err
}

func (o otherEngine) List(ctx context.Context, labels map[string]string) ([]engine.Info, error) {
	list, err := o.e.List(ctx, labels)
	for i := range list {
		list[i].ID = otherPrefix + list[i].ID
	}
	return list, err
}

func (o otherEngine) Remove(ctx context.Context, id string) error {
	return o.e.Remove(ctx, strings.TrimPrefix(id, otherPrefix))
}

func (o otherEngine) CopyTo(ctx context.Context, id, dir string, tar io.Reader) error {
	return o.e.CopyTo(ctx, strings.TrimPrefix(id, otherPrefix), dir, tar)
}

func (o otherEngine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	return o.e.CopyFrom(ctx, strings.TrimPrefix(id, otherPrefix), path)
}

func TestWithEngineNeutral(t *testing.T) {
	testenv.RequireDocker(t, "wraps the Docker engine in one of another name")
	t.Parallel()
	e := otherEngine{dockerEngine(t)}
	label := map[string]string{"enginetest-neutral": testenv.Owner()}
	for _, secureProfile := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "secure"}[secureProfile], func(t *testing.T) {
			opts := []sandbox.Option{sandbox.WithEngine(e), sandbox.WithImage(testenv.BusyboxImage), sandbox.WithLabels(label),
				sandbox.WithLifetime(10 * time.Minute), sandbox.WithUser("1000:1000")}
			if secureProfile {
				opts = append(opts, sandbox.WithSecureProfile())
			}
			sb, err := sandbox.New(testCtx(t), opts...)
			require.NoError(t, err)
			defer sb.Close()
			assert.True(t, strings.HasPrefix(sb.ID(), otherPrefix) && len(sb.ID()) > 64, "the engine's ID, whole: %s", sb.ID())
			resp, err := sb.Execute(testCtx(t), "id -u; pwd; echo hi > f && cat f")
			require.NoError(t, err)
			assert.Equal(t, "1000\n/workspace\nhi\n", resp.Output)
			assert.Equal(t, 0, resp.ExitCode)
			up, err := sb.UploadFiles(testCtx(t), []sandbox.FileUpload{{Path: "big", Content: make([]byte, 2<<20)}})
			require.NoError(t, err)
			require.NoError(t, up[0].Err) // through the engine's CopyTo
			down, err := sb.DownloadFiles(testCtx(t), []string{"big"})
			require.NoError(t, err)
			require.NoError(t, down[0].Err) // through the engine's CopyFrom
			assert.Len(t, down[0].Content, 2<<20)
			l, err := sb.Lifetimes(testCtx(t))
			require.NoError(t, err)
			assert.Equal(t, 10*time.Minute, l.Lifetime)

			list, err := sandbox.List(testCtx(t), sandbox.Filter{Labels: label}, sandbox.WithEngine(e))
			require.NoError(t, err)
			require.Len(t, list, 1)
			assert.Equal(t, sb.ID(), list[0].ID)
			// Attach by ID on the same engine.
			other, err := sandbox.Attach(testCtx(t), sb.ID(), sandbox.WithEngine(e))
			require.NoError(t, err)
			resp, err = other.Execute(testCtx(t), "cat f")
			require.NoError(t, err)
			assert.Equal(t, "hi\n", resp.Output)
			other.Detach()

			// What the engine cannot do is refused, with the reason.
			assert.ErrorIs(t, sb.Pause(testCtx(t)), errors.ErrUnsupported)
			assert.ErrorIs(t, sb.Stop(testCtx(t)), errors.ErrUnsupported)
			_, err = sb.Snapshot(testCtx(t))
			assert.ErrorIs(t, err, errors.ErrUnsupported)
			assert.ErrorContains(t, err, "other")

			require.NoError(t, sb.Close())
			_, err = sandbox.Attach(testCtx(t), sb.ID(), sandbox.WithEngine(e))
			assert.ErrorIs(t, err, sandbox.ErrGone)
			list, err = sandbox.List(testCtx(t), sandbox.Filter{Labels: label}, sandbox.WithEngine(e))
			require.NoError(t, err)
			assert.Empty(t, list)
		})
	}
}

// TestWithEngineRefusals: Docker-only options on another engine, and
// WithEngine beside a Docker client option, fail before anything is made.
func TestWithEngineRefusals(t *testing.T) {
	testenv.RequireDocker(t, "wraps the Docker engine in one of another name")
	t.Parallel()
	e := otherEngine{dockerEngine(t)}
	for name, opt := range map[string]sandbox.Option{
		"WithVolumes":         sandbox.WithVolumes("/tmp:/x"),
		"WithDNS":             sandbox.WithDNS("1.1.1.1"),
		"WithGPUs":            sandbox.WithGPUs("all"),
		"WithShmSize":         sandbox.WithShmSize(1 << 20),
		"WithRuntime":         sandbox.WithRuntime("runc"),
		"WithUlimits":         sandbox.WithUlimits(sandbox.Ulimit{Name: "nofile", Soft: 10, Hard: 10}),
		"WithNetworkMode":     sandbox.WithNetworkMode("bridge"),
		"WithPullPolicy":      sandbox.WithPullPolicy(sandbox.PullNever),
		"WithContainerConfig": sandbox.WithContainerConfig(func(*container.Config, *container.HostConfig) {}),
	} {
		_, err := sandbox.New(testCtx(t), sandbox.WithEngine(e), sandbox.WithImage(testenv.BusyboxImage), opt)
		if !assert.ErrorIs(t, err, sandbox.ErrInvalidOption, name) {
			continue
		}
		assert.True(t, strings.Contains(err.Error(), name) && strings.Contains(err.Error(), "other"), err.Error())
	}
	_, err := sandbox.New(testCtx(t), sandbox.WithEngine(e), sandbox.WithNetworkMode("none"), sandbox.WithClientOptions(client.FromEnv))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	assert.ErrorContains(t, err, "WithEngine")
	_, err = sandbox.List(testCtx(t), sandbox.Filter{}, sandbox.WithEngine(nil))
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
}

// TestWithEngineDocker: DockerEngine's value takes the Docker path (its
// options, snapshots), and the sandbox leaves the engine open.
func TestWithEngineDocker(t *testing.T) {
	testenv.RequireDocker(t, "the Docker engine itself (the relayed engine passes enginetest in its own module)")
	t.Parallel()
	e := dockerEngine(t)
	sb, err := sandbox.New(testCtx(t), sandboxOptions(testenv.BusyboxImage, sandbox.WithEngine(e), sandbox.WithShmSize(8<<20))...)
	require.NoError(t, err)
	resp, err := sb.Execute(testCtx(t), "echo ok")
	require.NoError(t, err)
	assert.Equal(t, "ok\n", resp.Output)
	require.NoError(t, sb.Close())
	_, err = e.List(testCtx(t), map[string]string{sandbox.LabelSandbox: "true"})
	assert.NoError(t, err, "Close closed the caller's engine")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = sandbox.DockerEngine(ctx)
	assert.ErrorIs(t, err, sandbox.ErrDaemonUnreachable)
}
