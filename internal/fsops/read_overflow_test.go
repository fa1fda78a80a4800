package fsops

import (
	"io"
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hugeFS holds one file, "huge.txt": size bytes of 'a', no line end,
// generated as it is read (a sparse file's hole reads the same, as NULs).
type hugeFS struct{ size int64 }

func (h hugeFS) Open(name string) (fs.File, error) {
	if name != "huge.txt" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &hugeFile{r: io.LimitReader(ones{}, h.size), size: h.size}, nil
}

type ones struct{}

func (ones) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

type hugeFile struct {
	r    io.Reader
	size int64
}

func (f *hugeFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *hugeFile) Close() error               { return nil }
func (f *hugeFile) Stat() (fs.FileInfo, error) { return hugeInfo{f.size}, nil }

type hugeInfo struct{ size int64 }

func (i hugeInfo) Name() string       { return "huge.txt" }
func (i hugeInfo) Size() int64        { return i.size }
func (i hugeInfo) Mode() fs.FileMode  { return 0o644 }
func (i hugeInfo) ModTime() time.Time { return time.Time{} }
func (i hugeInfo) IsDir() bool        { return false }
func (i hugeInfo) Sys() any           { return nil }

// A page of a file whose first line is 1 TiB long comes at once: the rest
// of the line is not read to its end.
func TestReadOverflowingLineBounded(t *testing.T) {
	done := make(chan struct{})
	var res ReadResult
	var err error
	go func() {
		defer close(done)
		res, err = Read(hugeFS{1 << 40}, "/huge.txt", 0, 100)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Read scans the whole line")
	}
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.LessOrEqual(t, len(res.Content), MaxPageBytes)
	assert.Equal(t, 1, res.StartLine)
	assert.Equal(t, 1, res.EndLine)
	assert.Equal(t, -1, res.TotalLines, "unknown")
	assert.Equal(t, 1, res.NextOffset, "the line after the cut one")

	// A line that ends within the scan budget is still followed to its end.
	res, err = Read(hugeFS{8 << 20}, "/huge.txt", 0, 100)
	require.NoError(t, err)
	assert.True(t, res.Truncated)
	assert.Equal(t, 1, res.TotalLines)
	assert.Equal(t, -1, res.NextOffset)
}
