package integration

import (
	"io/fs"
	"testing"

	"github.com/dockersandbox/sandbox/internal/testenv"
)

// fs.WalkDir over the sandbox's FS on a tree of 10,000 files in 100
// directories (one request per directory, on the shared channel):
//
//	go test -run '^$' -bench FSWalkDir -benchtime 10x
func BenchmarkFSWalkDir10k(b *testing.B) {
	sb := newSandbox(b, testenv.BusyboxImage)
	ctx := testCtx(b)
	dir := testDir(b)
	makeTree(b, sb, dir, 10_000)
	fsys := sb.FS(ctx)
	for b.Loop() {
		n := 0
		err := fs.WalkDir(fsys, fsName(dir), func(_ string, _ fs.DirEntry, err error) error {
			n++
			return err
		})
		if err != nil || n != 10_101 {
			b.Fatalf("walked %d entries: %v", n, err)
		}
	}
}

// One directory of 100 files listed through the FS, for comparison.
func BenchmarkFSReadDir100(b *testing.B) {
	sb := newSandbox(b, testenv.BusyboxImage)
	ctx := testCtx(b)
	dir := testDir(b)
	makeTree(b, sb, dir, 100)
	fsys := sb.FS(ctx)
	for b.Loop() {
		if _, err := fsys.ReadDir(fsName(dir) + "/d0"); err != nil {
			b.Fatal(err)
		}
	}
}
