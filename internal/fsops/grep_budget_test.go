package fsops

import (
	"context"
	"fmt"
	"io/fs"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowFS delays every Open after the first fast ones, standing in for a tree
// too large to search within the budget. The fast opens make sure some
// matches are found before the budget ends even when the machine is loaded
// (a test that slept on every open found nothing once under CI's load).
type slowFS struct {
	fs.FS
	fast  int // opens served at once
	delay time.Duration
	opens *atomic.Int64
}

func (s slowFS) Open(name string) (fs.File, error) {
	if s.opens.Add(1) > int64(s.fast) {
		time.Sleep(s.delay)
	}
	return s.FS.Open(name)
}

// Grep stops at its time budget, keeping the matches found so far, and says
// so with Truncated; the default budget is Glob's.
func TestGrepBudget(t *testing.T) {
	m := fstest.MapFS{}
	for i := range 1000 {
		m[fmt.Sprintf("d/f%04d.txt", i)] = file("hit\n")
	}
	start := time.Now()
	slow := slowFS{FS: m, fast: 50, delay: 10 * time.Millisecond, opens: new(atomic.Int64)}
	got, err := Grep(context.Background(), slow, "/d", "hit", GrepOptions{Budget: 500 * time.Millisecond})
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.True(t, got.Truncated)
	assert.NotEmpty(t, got.Matches, "what was found before the budget ran out is kept")
	assert.Less(t, len(got.Matches), 1000)
	assert.Less(t, elapsed, 5*time.Second, "the budget bounds the search (1000 files take over 9 s)")

	got, err = Grep(context.Background(), m, "/d", "hit", GrepOptions{})
	require.NoError(t, err)
	assert.False(t, got.Truncated, "a search within the default budget is complete")
	assert.Len(t, got.Matches, 1000)
	assert.Equal(t, defaultGlobBudget, defaultGrepBudget)

	// A single large file: the budget is checked as its lines are read.
	big := fstest.MapFS{"big.txt": file(repeatLine("hit\n", 3*grepCtxEvery))}
	got, err = Grep(context.Background(), big, "/big.txt", "hit", GrepOptions{Budget: time.Nanosecond})
	require.NoError(t, err)
	assert.True(t, got.Truncated)
	assert.Less(t, len(got.Matches), 3*grepCtxEvery)
}

func repeatLine(line string, n int) string {
	b := make([]byte, 0, len(line)*n)
	for range n {
		b = append(b, line...)
	}
	return string(b)
}

// Grep's file filter matches hidden names as GNU grep's --include does
// (deepagents passes the glob to it): "*.go" selects ".hidden.go", and a
// filter with "/" enters hidden directories. Glob keeps its rules.
func TestGrepFilterDotfiles(t *testing.T) {
	fsys := fstest.MapFS{
		"ws/a.go":            file("TODO a\n"),
		"ws/.hidden.go":      file("TODO hidden\n"),
		"ws/.hidden.py":      file("TODO py\n"),
		"ws/src/.cache/c.go": file("TODO cache\n"),
		"ws/src/.d.go":       file("TODO d\n"),
	}
	for _, tt := range []struct {
		glob string
		want []string
	}{
		{"*.go", []string{"/ws/.hidden.go:1", "/ws/a.go:1", "/ws/src/.cache/c.go:1", "/ws/src/.d.go:1"}},
		{"?hidden.*", []string{"/ws/.hidden.go:1", "/ws/.hidden.py:1"}},
		{"src/*.go", []string{"/ws/src/.d.go:1"}},
		{"src/**/*.go", []string{"/ws/src/.cache/c.go:1", "/ws/src/.d.go:1"}},
		{"[!a]*.go", []string{"/ws/.hidden.go:1", "/ws/src/.cache/c.go:1", "/ws/src/.d.go:1"}},
	} {
		got, err := Grep(context.Background(), fsys, "/ws", "TODO", GrepOptions{Glob: tt.glob})
		require.NoError(t, err)
		assert.Equal(t, tt.want, where(got.Matches), tt.glob)
	}
	g, err := Glob(context.Background(), fsys, "/ws", "*.go", GlobOptions{})
	require.NoError(t, err)
	require.Len(t, g.Matches, 2, "Glob still skips hidden names for a pattern without a leading dot")
}
