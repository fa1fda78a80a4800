package k8s_test

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
)

// TestTransferOnPod: files of 3 MB up and down, intact (they go through
// the engine's CopyTo and CopyFrom: exec stdin, where containerd loses
// data when the command's stdout closes first).
func TestTransferOnPod(t *testing.T) {
	e := testEngine(t)
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
}
