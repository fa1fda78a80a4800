package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/require"
)

const processChildEnv = "DOCKERSANDBOX_TEST_PROCESS_CHILD"

// TestHelperProcessStartAndExit is the child of TestProcessSurvivesOwner:
// it creates a sandbox on the image named by the environment, starts a
// process that prints a line every 100 ms, prints the IDs, lets go of the
// sandbox (Detach) and exits.
func TestHelperProcessStartAndExit(t *testing.T) {
	image := os.Getenv(processChildEnv)
	if image == "" {
		t.Skip("child process of TestProcessSurvivesOwner")
	}
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandboxOptions(image)...)
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	fmt.Println("SANDBOX", sb.ID())
	p, err := sb.StartProcess(ctx, `i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done`)
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	fmt.Println("PROCESS", p.ID())
	sb.Detach()
	// Exit now: testenv.Main would remove the sandbox as a leak.
	os.Exit(0)
}

// TestProcessSurvivesOwner: a process outlives the program that started
// it; a new program attaches, finds it in Processes, reads output written
// after the first program exited, and kills it.
func TestProcessSurvivesOwner(t *testing.T) {
	t.Parallel()
	testenv.MustHaveEngine(t)
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			begun := time.Now()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessStartAndExit$", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), processChildEnv+"="+image)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			var box, id string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				require.False(t, strings.HasPrefix(line, "ERROR"), line)
				if v, ok := strings.CutPrefix(line, "SANDBOX "); ok {
					box = v
					t.Cleanup(func() {
						_ = removeBox(t, box)
					})
				}
				if v, ok := strings.CutPrefix(line, "PROCESS "); ok {
					id = v
				}
			}
			require.NoError(t, cmd.Wait(), "the child exits")
			require.NotEmpty(t, box)
			require.NotEmpty(t, id)

			ctx := testCtx(t)
			sb, err := sandbox.Attach(ctx, box, onEngine()...)
			if err != nil && !testenv.Relayed() {
				// Something removed the sandbox of an owner that exited
				// (seen once, on Podman): what the engine saw happen to it.
				t.Fatalf("Attach: %v; the engine's events for it:%s", err, containerHistory(t, box, begun))
			}
			require.NoError(t, err)
			defer sb.Close()
			list, err := sb.Processes(ctx)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, id, list[0].ID)
			require.Equal(t, sandbox.ProcessRunning, list[0].State)
			p, err := sb.Process(ctx, id)
			require.NoError(t, err)
			// Its first line may not be written yet (under gVisor on a
			// busy machine, the child's Detach came first): wait for it.
			first, err := p.Read(ctx, 0, sandbox.OutputWait(10*time.Second))
			require.NoError(t, err)
			require.Contains(t, string(first.Data), "tick 1\n")
			// It still writes: output past what there was.
			more, err := p.Read(ctx, first.Next, sandbox.OutputWait(5*time.Second))
			require.NoError(t, err)
			require.NotEmpty(t, more.Data)
			require.Equal(t, first.Next, more.Cursor)
			require.NoError(t, p.Kill(ctx))
			info, err := p.Info(ctx)
			require.NoError(t, err)
			require.Equal(t, sandbox.ProcessExited, info.State)
			require.NotContains(t, psArgs(t, sb), "sleep 0.1")
		})
	}
}
