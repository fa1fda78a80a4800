package helper

import (
	"context"
	"os/exec"
	"testing"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// BenchmarkExecEcho: runExec of `echo hi` (what Execute("echo hi") costs
// in the helper, without the channel), beside the floor: os/exec of the
// same shell command, and of /bin/true.
func BenchmarkExecEcho(b *testing.B) {
	ctx := context.Background()
	b.Run("runExec", func(b *testing.B) {
		KeepSpareReaper()
		for b.Loop() {
			var out []byte
			res := runExec(ctx, proto.Request{Op: proto.OpExec, Command: "echo hi", Combined: true}, nil, func(k proto.Kind, p []byte) error {
				out = append(out, p...)
				return nil
			})
			if res.ExitCode != 0 || string(out) != "hi\n" {
				b.Fatalf("exit %d, output %q, error %v", res.ExitCode, out, res.Error)
			}
		}
	})
	b.Run("os-exec-sh", func(b *testing.B) {
		for b.Loop() {
			if out, err := exec.Command(shell(), "-c", "echo hi").Output(); err != nil || string(out) != "hi\n" {
				b.Fatal(err)
			}
		}
	})
	b.Run("os-exec-true", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
