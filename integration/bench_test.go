package integration

import (
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

// The hot paths, on the shared channel and on an exec per operation:
//
//	go test -run '^$' -bench . -benchtime 50x
func BenchmarkOperations(b *testing.B) {
	for _, mode := range []struct {
		name   string
		shared bool
	}{{"channel", true}, {"per_exec", false}} {
		b.Run(mode.name, func(b *testing.B) {
			sb := newSandbox(b, testenv.BusyboxImage, sandbox.WithSharedChannel(mode.shared))
			ctx := testCtx(b)
			if err := sb.Write(ctx, "bench.txt", []byte("marker-A\nsome text\n")); err != nil {
				b.Fatal(err)
			}
			ops := map[string]func() error{
				"execute": func() error { _, err := sb.Execute(ctx, "echo hi"); return err },
				"read":    func() error { _, err := sb.Read(ctx, "bench.txt"); return err },
				"write":   func() error { return sb.Write(ctx, "w.txt", []byte("hello")) },
				"edit": func() error {
					if _, err := sb.Edit(ctx, "bench.txt", "marker-A", "marker-B", false); err != nil {
						return err
					}
					_, err := sb.Edit(ctx, "bench.txt", "marker-B", "marker-A", false)
					return err
				},
				"ls":   func() error { _, err := sb.Ls(ctx, "."); return err },
				"grep": func() error { _, err := sb.Grep(ctx, "text", ""); return err },
				"glob": func() error { _, err := sb.Glob(ctx, "*.txt", sb.WorkingDir()); return err },
			}
			for _, name := range []string{"execute", "read", "write", "edit", "ls", "grep", "glob"} {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						if err := ops[name](); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func BenchmarkPoolGet(b *testing.B) {
	p, err := sandbox.NewPool(testCtx(b), sandbox.PoolSize(4),
		sandbox.PoolSandboxOptions(sandboxOptions(testenv.BusyboxImage)...))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := testCtx(b)
	for b.Loop() {
		b.StopTimer()
		for p.Ready() < 4 {
			if err := p.Err(); err != nil {
				b.Fatal(err)
			}
			sleepBriefly()
		}
		b.StartTimer()
		sb, err := p.Get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		sb.Close()
		b.StartTimer()
	}
}
