package k8s_test

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/k8s"
)

// TestTransferOnPod: files of 3 MB up and down, intact (they go through
// the engine's CopyTo and CopyFrom: exec stdin, where containerd loses
// data when the command's stdout closes first), and a command, over each
// exec protocol: SPDY, which the test cluster takes (the engine must not
// have fallen back), and WebSocket, what an API server that refuses SPDY
// leaves.
func TestTransferOnPod(t *testing.T) {
	for _, proto := range []string{"spdy", "websocket"} {
		t.Run(proto, func(t *testing.T) {
			e := testEngine(t)
			if proto == "websocket" {
				k8s.WebSocketOnly(e)
			}
			sb := newSandbox(t, e, runLabel(t))
			ctx := ctxT(t, 2*time.Minute)
			content := make([]byte, 3_000_000)
			_, _ = rand.Read(content)
			for i := range 3 {
				up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "big", Content: content}})
				if err != nil || up[0].Err != nil {
					t.Fatalf("upload %d: %v %v", i, err, up)
				}
				down, err := sb.DownloadFiles(ctx, []string{"big"})
				if err != nil || down[0].Err != nil {
					t.Fatalf("download %d: %v %v", i, err, down)
				}
				if !bytes.Equal(down[0].Content, content) {
					t.Fatalf("round trip %d: %d bytes back, not the same", i, len(down[0].Content))
				}
			}
			res, err := sb.Execute(ctx, "wc -c < big; exit 3")
			if err != nil || res.ExitCode != 3 || strings.TrimSpace(res.Output) != "3000000" {
				t.Fatalf("Execute: %v, exit %d, output %q", err, res.ExitCode, res.Output)
			}
			if proto == "spdy" && k8s.SPDYRefused(e) {
				t.Fatal("the engine fell back to WebSocket on a cluster that takes SPDY")
			}
		})
	}
}
