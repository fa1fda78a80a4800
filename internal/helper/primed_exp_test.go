package helper

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

func BenchmarkPrimedShell(b *testing.B) {
	b.Run("primed", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			b.StopTimer()
			sr, sw, _ := os.Pipe()
			or, ow, _ := os.Pipe()
			cmd := exec.Command(shell(), "-c", ". /dev/fd/3")
			cmd.ExtraFiles = []*os.File{sr}
			cmd.Stdout = ow
			cmd.Start()
			sr.Close()
			ow.Close()
			time.Sleep(3 * time.Millisecond) // primed
			b.StartTimer()
			t0 := time.Now()
			sw.Write([]byte("exec 3<&-; echo hi"))
			sw.Close()
			out, _ := io.ReadAll(or)
			cmd.Wait()
			total += time.Since(t0)
			if string(out) != "hi\n" {
				b.Fatalf("%q", out)
			}
		}
		_ = total
	})
}
