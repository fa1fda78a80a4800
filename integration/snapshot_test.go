package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// removeSnapshot removes snap when the test ends, and fails the test if
// its image is still there then.
func removeSnapshot(t *testing.T, snap *sandbox.Snapshot) {
	t.Helper()
	t.Cleanup(func() {
		ctx := sandboxtest.Context(t)
		require.NoError(t, snap.Remove(ctx))
		_, err := testenv.Client(t).ImageInspect(ctx, snap.ID)
		require.Error(t, err, "snapshot image %s is still there", snap.ID)
	})
}

// pruneSnapshotsByLabel removes, when the test ends (after the sandboxes
// it makes later are closed), every snapshot of this process carrying
// labels: also those of a step that failed before removeSnapshot.
func pruneSnapshotsByLabel(t *testing.T, labels map[string]string) {
	t.Helper()
	t.Cleanup(func() {
		_, err := sandbox.PruneSnapshots(context.Background(), sandbox.Filter{Labels: labels, Owner: testenv.Owner()})
		require.NoError(t, err)
	})
}

// randomBytes returns n random bytes.
func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// TestSnapshotForkChain: snapshot → fork 3 → change each → snapshot each
// again → fork those; every file is checked byte for byte, and the
// options (working dir, env, labels) come back with the snapshot.
func TestSnapshotForkChain(t *testing.T) {
	testenv.RequireDocker(t, "snapshots are Docker images (commit); Snapshot is errors.ErrUnsupported on other engines")
	t.Parallel()
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			ctx := sandboxtest.Context(t)
			pruneSnapshotsByLabel(t, map[string]string{"snaptest": t.Name()})
			sb := newSandbox(t, image, sandbox.WithWorkingDir("/work/dir"), sandbox.WithEnv("SNAP_ENV=kept"),
				sandbox.WithLabels(map[string]string{"snaptest": t.Name()}))
			big := randomBytes(t, 3<<20)
			require.NoError(t, sb.Write(ctx, "a.txt", []byte("generation 0\n")))
			res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "sub/big.bin", Content: big}})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
			mustSh(t, sb, "ln -s a.txt link && chmod 0750 sub")

			snap, err := sb.Snapshot(ctx, sandbox.SnapshotLabels(map[string]string{"gen": "0"}))
			require.NoError(t, err)
			removeSnapshot(t, snap)
			require.Equal(t, "true", snap.Labels[sandbox.LabelSnapshot])
			require.Equal(t, "0", snap.Labels["gen"])

			forks, err := snap.Fork(ctx, 3)
			require.NoError(t, err)
			for _, f := range forks {
				t.Cleanup(func() { require.NoError(t, f.Close()) })
			}
			var snaps []*sandbox.Snapshot
			for i, f := range forks {
				require.Equal(t, "/work/dir", f.WorkingDir())
				require.Equal(t, "kept", mustSh(t, f, "echo $SNAP_ENV"))
				require.Equal(t, "generation 0\n", string(download(t, f, "a.txt")))
				require.True(t, bytes.Equal(big, download(t, f, "sub/big.bin")), "big.bin differs in fork %d", i)
				require.Equal(t, "a.txt", mustSh(t, f, "readlink link"))
				require.Equal(t, "750", mustSh(t, f, "stat -c %a sub"))
				mine := fmt.Sprintf("fork %d\n", i)
				require.NoError(t, f.Write(ctx, "a.txt", []byte(mine)))
				require.NoError(t, f.Write(ctx, fmt.Sprintf("only-%d", i), []byte(mine)))
				s2, err := f.Snapshot(ctx)
				require.NoError(t, err)
				removeSnapshot(t, s2)
				snaps = append(snaps, s2)
			}
			// The original is untouched by its forks.
			require.Equal(t, "generation 0\n", string(download(t, sb, "a.txt")))
			for i, s2 := range snaps {
				g2, err := s2.Fork(ctx, 1)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, g2[0].Close()) })
				mine := fmt.Sprintf("fork %d\n", i)
				require.Equal(t, mine, string(download(t, g2[0], "a.txt")))
				require.Equal(t, mine, string(download(t, g2[0], fmt.Sprintf("only-%d", i))))
				require.True(t, bytes.Equal(big, download(t, g2[0], "sub/big.bin")))
				for j := range snaps {
					if j != i {
						require.Equal(t, "no", mustSh(t, g2[0], fmt.Sprintf("test -e only-%d && echo yes || echo no", j)))
					}
				}
				require.Equal(t, "kept", mustSh(t, g2[0], "echo $SNAP_ENV"))
			}
			// Listed by label (the sandbox's labels are recorded), pruned
			// by owner and label.
			list, err := sandbox.ListSnapshots(ctx, sandbox.Filter{Labels: map[string]string{"snaptest": t.Name()}})
			require.NoError(t, err)
			require.Len(t, list, 4)
		})
	}
}

// TestSnapshotListPrune: snapshots are listed and pruned with the
// sandboxes' Filter; Prune refuses the zero Filter.
func TestSnapshotListPrune(t *testing.T) {
	testenv.RequireDocker(t, "snapshots are Docker images (commit); Snapshot is errors.ErrUnsupported on other engines")
	t.Parallel()
	ctx := sandboxtest.Context(t)
	label := map[string]string{"prunetest": t.Name()}
	pruneSnapshotsByLabel(t, label)
	sb := newSandbox(t, testenv.BusyboxImage)
	mustWrite(t, sb, "f", "x")
	var ids []string
	for range 2 {
		snap, err := sb.Snapshot(ctx, sandbox.SnapshotLabels(label))
		require.NoError(t, err)
		removeSnapshot(t, snap)
		ids = append(ids, snap.ID)
	}
	_, err := sandbox.PruneSnapshots(ctx, sandbox.Filter{})
	require.ErrorIs(t, err, sandbox.ErrInvalidOption)
	list, err := sandbox.ListSnapshots(ctx, sandbox.Filter{Labels: label, Owner: testenv.Owner()})
	require.NoError(t, err)
	require.Len(t, list, 2)
	got, err := sandbox.LookupSnapshot(ctx, list[0].Ref)
	require.NoError(t, err)
	require.Equal(t, list[0].ID, got.ID)
	none, err := sandbox.ListSnapshots(ctx, sandbox.Filter{Labels: label, DeadOwners: true})
	require.NoError(t, err)
	require.Empty(t, none, "this process is alive")
	removed, err := sandbox.PruneSnapshots(ctx, sandbox.Filter{Labels: label})
	require.NoError(t, err)
	require.ElementsMatch(t, ids, removed)
	for _, id := range ids {
		_, err := testenv.Client(t).ImageInspect(ctx, id)
		require.Error(t, err)
	}
	_, err = sandbox.LookupSnapshot(ctx, ids[0])
	require.ErrorIs(t, err, sandbox.ErrImageNotFound)
	_, err = sandbox.LookupSnapshot(ctx, testenv.BusyboxImage)
	require.Error(t, err)
}
