package integration

//lint:file-ignore SA1019 WithClient and WithClientOptions are under test here: deprecated, and still supported

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
)

// secondHostEnv names a second engine (a DOCKER_HOST value, e.g.
// unix:///tmp/podman.sock) for the tests that cross engines.
const secondHostEnv = "DOCKERSANDBOX_TEST_SECOND_HOST"

// secondEngine returns the options that reach the second engine, whose
// test images it builds when missing; the test is skipped when none is set.
func secondEngine(t *testing.T) []sandbox.Option {
	t.Helper()
	host := os.Getenv(secondHostEnv)
	if host == "" {
		t.Skip(secondHostEnv + " is not set: no second engine to hydrate into (e.g. " +
			secondHostEnv + "=unix:///tmp/podman.sock with DOCKER_HOST on Docker)")
	}
	cli, err := client.New(client.FromEnv, client.WithHost(host))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, testenv.EnsureImages(ctx, cli), "the test images on %s", host)
	// Every sandbox of the test on either engine is removed by its Close;
	// this catches one a failed step left on the second engine, which the
	// end-of-run leak check (first engine) does not see.
	t.Cleanup(func() {
		left, err := testenv.Leaked(context.Background(), cli, testenv.Owner())
		require.NoError(t, err)
		require.Empty(t, left, "sandboxes left on %s", host)
	})
	return []sandbox.Option{sandbox.WithClient(cli)}
}

// TestPersistHydrateAcrossEngines: a tree persisted from a sandbox on one
// engine (DOCKER_HOST) is hydrated into a sandbox on the other
// (DOCKERSANDBOX_TEST_SECOND_HOST), and back, on the other test image:
// bytes, modes, symlinks, mtimes and the target's owner.
func TestPersistHydrateAcrossEngines(t *testing.T) {
	testenv.RequireDocker(t, "moves a sandbox between Docker and a private Podman")
	t.Parallel()
	second := secondEngine(t)
	for i, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			ctx := sandboxtest.Context(t)
			src := newSandbox(t, image)
			dst := newSandbox(t, images[(i+1)%len(images)], second...)
			big := randomBytes(t, 2<<20)
			res, err := src.UploadFiles(ctx, []sandbox.FileUpload{{Path: "d/big.bin", Content: big}})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
			mustWrite(t, src, "d/e/small.txt", "small\n")
			mustSh(t, src, "chmod 0700 d/e && chmod 0751 d/big.bin && ln -s e/small.txt d/link && touch -d '2001-02-03 04:05:06' d/e/small.txt")

			var buf bytes.Buffer
			require.NoError(t, src.Persist(ctx, &buf))
			require.NoError(t, dst.Hydrate(ctx, bytes.NewReader(buf.Bytes())))
			require.True(t, bytes.Equal(big, download(t, dst, "d/big.bin")), "big.bin differs on the second engine")
			require.Equal(t, "small\n", string(download(t, dst, "d/e/small.txt")))
			require.Equal(t, "751 700", mustSh(t, dst, "stat -c %a d/big.bin d/e | tr '\\n' ' ' | sed 's/ $//'"))
			require.Equal(t, "e/small.txt", mustSh(t, dst, "readlink d/link"))
			require.Equal(t, mustSh(t, src, "stat -c %Y d/e/small.txt"), mustSh(t, dst, "stat -c %Y d/e/small.txt"))
			require.Equal(t, mustSh(t, dst, "id -u"), mustSh(t, dst, "stat -c %u d/e/small.txt"), "owned by the target's user")

			// And back, changed on the second engine.
			mustWrite(t, dst, "d/e/small.txt", "changed on the second engine\n")
			mustSh(t, dst, "mkdir -p back && echo new > back/new.txt")
			buf.Reset()
			require.NoError(t, dst.Persist(ctx, &buf, "d/e", "back"))
			require.NoError(t, src.Hydrate(ctx, bytes.NewReader(buf.Bytes())))
			require.Equal(t, "changed on the second engine\n", string(download(t, src, "d/e/small.txt")))
			require.Equal(t, "new\n", string(download(t, src, "back/new.txt")))
			require.True(t, bytes.Equal(big, download(t, src, "d/big.bin")), "big.bin untouched")
		})
	}
}
