package helper

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// BenchmarkExecEcho: runExec of `echo hi` (what Execute("echo hi") costs
// in the helper, without the channel), beside the floor: os/exec of the
// same shell command, and of /bin/true; and what a shell started ahead
// would leave of it (primed-shell: a shell already waiting on its fd 3
// gets the command, runs it and exits), which the helper does not do:
// the shell's own messages would name the file it reads the command from
// (BENCHMARKS.md, "Where the time goes").
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
	b.Run("primed-shell", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			sr, sw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			or, ow, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(shell(), "-c", scriptBoot)
			cmd.ExtraFiles, cmd.Stdout = []*os.File{sr}, ow
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			sr.Close()
			ow.Close()
			time.Sleep(5 * time.Millisecond) // the shell waits on fd 3
			b.StartTimer()
			_, _ = sw.WriteString(scriptHead + "echo hi")
			sw.Close()
			out, _ := io.ReadAll(or)
			_ = cmd.Wait()
			or.Close()
			if string(out) != "hi\n" {
				b.Fatalf("output %q", out)
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
