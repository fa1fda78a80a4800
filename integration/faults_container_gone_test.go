//go:build linux

package integration

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A container killed or removed from outside, during a command or between
// calls, makes every call fail with ErrGone, promptly; Close still works.
// goneBound is how soon a call on a sandbox whose container was killed or
// removed fails (RELIABILITY.md): two missed alive frames, an inspect, the
// settling look, with slack for two busy cores.
const goneBound = 8 * time.Second

func TestContainerGoneFromOutside(t *testing.T) {
	t.Parallel()
	kill := map[string]func(ctx context.Context, id string) error{
		"removed": func(ctx context.Context, id string) error { return testEngine(t).Remove(ctx, id) },
	}
	if !testenv.Relayed() { // a pod's PID 1 cannot be killed through the engine
		cli := testenv.Client(t)
		kill["killed"] = func(ctx context.Context, id string) error {
			_, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
			return err
		}
		kill["removed"] = func(ctx context.Context, id string) error {
			_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			return err
		}
	}
	for how, end := range kill {
		for _, when := range []string{"during a command", "between calls"} {
			t.Run(how+" "+when, func(t *testing.T) {
				t.Parallel()
				ctx := testCtx(t)
				sb := newSandbox(t, testenv.BusyboxImage)
				require.NoError(t, sb.Write(ctx, "f.txt", []byte("content")))
				if when == "during a command" {
					long := startLong(t, sb) // its own exec
					shared := async(func() error { _, err := sb.Execute(ctx, "sleep 1000", sandbox.ExecTimeout(0)); return err })
					time.Sleep(200 * time.Millisecond) // let the shared-channel one start too
					require.NoError(t, end(ctx, sb.ID()))
					assert.ErrorIs(t, within(t, long, "command on its own exec"), sandbox.ErrGone)
					assert.ErrorIs(t, within(t, shared, "command on the shared channel"), sandbox.ErrGone)
				} else {
					require.NoError(t, end(ctx, sb.ID()))
				}
				calls := map[string]func() error{
					"execute": func() error { _, err := sb.Execute(ctx, "true"); return err },
					"read":    func() error { _, err := sb.Read(ctx, "f.txt"); return err },
					"write":   func() error { return sb.Write(ctx, "g.txt", []byte("x")) },
					"ls":      func() error { _, err := sb.Ls(ctx, "."); return err },
					"upload": func() error {
						_, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "u.txt", Content: []byte("x")}})
						return err
					},
					"upload large": func() error { // through Docker's archive API
						_, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "big.bin", Content: make([]byte, 3<<20)}})
						return err
					},
					"download": func() error { _, err := sb.DownloadFiles(ctx, []string{"f.txt"}); return err },
				}
				for name, call := range calls {
					start := time.Now()
					assert.ErrorIs(t, within(t, async(call), name), sandbox.ErrGone, name)
					// Not the stall checks' ten seconds: a stream that outlives
					// its container (gVisor) is found out by asking the engine.
					assert.Less(t, time.Since(start), goneBound, name)
				}
				assert.NoError(t, sb.Close())
			})
		}
	}
}
