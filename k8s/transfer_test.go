package k8s_test

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/k8s"
)

// TestTransferOnPod: files of 3 MB up and down, intact, through
// UploadFiles and DownloadFiles (the shared channel: the engine copies by
// exec, engine.ExecCopier) and through the engine's CopyTo and CopyFrom
// (exec stdin, where containerd loses data when the command's stdout
// closes first), and a command, over each exec protocol: SPDY, which the
// test cluster takes (the engine must not have fallen back), and
// WebSocket, what an API server that refuses SPDY leaves.
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
			var archive bytes.Buffer
			tw := tar.NewWriter(&archive)
			_ = tw.WriteHeader(&tar.Header{Name: "copied", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
			_, _ = tw.Write(content)
			_ = tw.Close()
			if err := e.CopyTo(ctx, sb.ID(), sb.WorkingDir(), &archive); err != nil {
				t.Fatalf("CopyTo: %v", err)
			}
			rc, err := e.CopyFrom(ctx, sb.ID(), sb.WorkingDir()+"/copied")
			if err != nil {
				t.Fatalf("CopyFrom: %v", err)
			}
			tr := tar.NewReader(rc)
			if _, err := tr.Next(); err != nil {
				t.Fatalf("CopyFrom's archive: %v", err)
			}
			back, err := io.ReadAll(tr)
			rc.Close()
			if err != nil || !bytes.Equal(back, content) {
				t.Fatalf("CopyTo and CopyFrom: %v, %d bytes back, the same: %v", err, len(back), bytes.Equal(back, content))
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
