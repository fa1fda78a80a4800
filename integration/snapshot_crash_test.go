package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
)

const crashSnapshotEnv = "DOCKERSANDBOX_TEST_CRASH_SNAPSHOT"

// TestHelperProcessCrashInSnapshot is the child of TestCrashInsideSnapshot:
// it takes a snapshot of a secure sandbox (whose volumes make Snapshot
// commit twice) and stops for ever after the first commit.
func TestHelperProcessCrashInSnapshot(t *testing.T) {
	if os.Getenv(crashSnapshotEnv) != "1" {
		t.Skip("child process of TestCrashInsideSnapshot")
	}
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.WithImage(testenv.BusyboxImage), sandbox.WithPullPolicy(sandbox.PullNever), sandbox.WithSecureProfile())
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	fmt.Println("SANDBOX", sb.ID())
	testhook.SetAfterSnapshotCommit(func(id string) {
		fmt.Println("IMAGE", id)
		fmt.Println("READY")
		select {}
	})
	_, err = sb.Snapshot(ctx)
	fmt.Println("ERROR snapshot returned", err)
}

// TestCrashInsideSnapshot: a host process killed inside Snapshot leaves a
// sandbox, an image and no more; Prune and PruneSnapshots with
// Filter.DeadOwners find and remove them.
func TestCrashInsideSnapshot(t *testing.T) {
	testenv.RequireDocker(t, "snapshots are Docker images (commit); Snapshot is errors.ErrUnsupported on other engines")
	t.Parallel()
	cli := testenv.Client(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessCrashInSnapshot$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), crashSnapshotEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var image, box string
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "IMAGE "); ok {
			image = v
		}
		if v, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			box = v
		}
		require.False(t, strings.HasPrefix(line, "ERROR"), line)
		if line == "READY" {
			break
		}
	}
	deadline.Stop()
	t.Cleanup(func() { // if the test fails before Prune removed it
		if box != "" {
			_, _ = cli.ContainerRemove(context.Background(), box, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
	require.NotEmpty(t, image, "the child did not reach the first commit")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	host, _ := os.Hostname()
	owner := host + ":" + strconv.Itoa(cmd.Process.Pid)
	ctx := testCtx(t)
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), image, client.ImageRemoveOptions{Force: true}) })

	snaps, err := sandbox.PruneSnapshots(ctx, sandbox.Filter{Owner: owner, DeadOwners: true})
	require.NoError(t, err)
	require.Equal(t, []string{image}, snaps, "PruneSnapshots found the first commit")
	removed, err := sandbox.Prune(ctx, sandbox.Filter{Owner: owner, DeadOwners: true}, onEngine()...)
	require.NoError(t, err)
	require.Equal(t, []string{box}, removed)
	_, err = cli.ImageInspect(ctx, image)
	require.Error(t, err, "the image is gone")
	left, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", sandbox.LabelOwner+"="+owner)})
	require.NoError(t, err)
	require.Empty(t, left.Items)
}
