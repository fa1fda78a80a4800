package fsops

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
)

// file returns a regular MapFS file with the given content.
func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s), Mode: 0o644} }

// symlink returns a MapFS symbolic link to target.
func symlink(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
}

// writeTree creates files (name → content) below dir, making parents.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// requirePathErr asserts err is a *fs.PathError for path that matches target.
func requirePathErr(t *testing.T, err error, path string, target error) *fs.PathError {
	t.Helper()
	require.ErrorIs(t, err, target)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, path, pe.Path)
	return pe
}

// withTimeout fails the test if f does not return within d (e.g. because a
// FIFO was opened and blocks).
func withTimeout(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("operation blocked (opened a FIFO?)")
	}
}

// allocatedDuring returns the bytes allocated on the heap while f runs.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// isRoot reports whether permission checks are bypassed.
func isRoot() bool { return os.Geteuid() == 0 }
