package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarOf makes a tar archive of name → content entries, in order.
func tarOf(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e[0], Mode: 0o644, Size: int64(len(e[1]))}))
		_, err := tw.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestUnsupportedArchitecture(t *testing.T) {
	testenv.RequireDocker(t, "loads an image of another architecture into Docker")
	ctx := testCtx(t)
	cli := testenv.Client(t)
	const ref = "dockersandbox-test/s390x:1"

	// A one-layer image for s390x, in docker save's format.
	layer := tarOf(t, [2]string{"hello.txt", "hi"})
	diffID := sha256.Sum256(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": "s390x", "os": "linux", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	require.NoError(t, err)
	configID := sha256.Sum256(config)
	configName := hex.EncodeToString(configID[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{"layer/layer.tar"}}})
	require.NoError(t, err)
	image := tarOf(t, [2]string{"layer/layer.tar", string(layer)}, [2]string{configName, string(config)}, [2]string{"manifest.json", string(manifest)})

	res, err := cli.ImageLoad(ctx, bytes.NewReader(image))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res)
	require.NoError(t, res.Close())
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true})
	})

	before := ours(t)
	sb, err := sandbox.New(ctx, sandbox.WithImage(ref), sandbox.WithPullPolicy(sandbox.PullNever))
	if err == nil {
		sb.Close()
	}
	require.ErrorIs(t, err, sandbox.ErrUnsupportedArch)
	assert.Contains(t, err.Error(), "s390x")
	assert.Equal(t, before, ours(t))
}
