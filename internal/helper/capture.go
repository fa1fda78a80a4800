package helper

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// capture keeps an exec's combined output in a file as it streams
// (proto.Capture): up to max bytes, counting every byte and the file's
// newlines, and the file's last bytes for the library's preview. A failed
// write stops the file, not the command.
type capture struct {
	mu    sync.Mutex
	f     *os.File
	max   int64
	size  int64
	total int64
	lines int64
	tail  []byte // a ring of the last proto.MaxCaptureTail bytes kept, in order once tailBytes runs
	err   error
}

// openCapture creates (or truncates) c.Path, making its directory, as the
// user the exec runs as.
func openCapture(c *proto.Capture) (*capture, *proto.Error) {
	name := string(c.Path)
	if c.Max <= 0 || !filepath.IsAbs(name) {
		return nil, &proto.Error{Code: proto.CodeBadRequest, Message: "capture: want an absolute path and a positive size"}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(name), 0o755); err == nil {
			f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	if err != nil {
		e := proto.ErrorOf(err)
		e.Message = "capture to " + name + ": " + e.Message
		return nil, e
	}
	return &capture{f: f, max: c.Max}, nil
}

// write keeps what of p fits under the cap.
func (c *capture) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if c.f == nil || c.err != nil || c.size >= c.max {
		return
	}
	p = p[:min(int64(len(p)), c.max-c.size)]
	n, err := c.f.Write(p)
	p = p[:n]
	c.size += int64(n)
	c.lines += int64(bytes.Count(p, []byte{'\n'}))
	c.tail = append(c.tail, p...)
	if extra := len(c.tail) - proto.MaxCaptureTail; extra > 0 {
		c.tail = append(c.tail[:0], c.tail[extra:]...)
	}
	if err != nil {
		c.err = err
	}
}

// close closes the file and says what it holds.
func (c *capture) close() *proto.Captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		if err := c.f.Close(); err != nil && c.err == nil {
			c.err = err
		}
		c.f = nil
	}
	r := &proto.Captured{Size: c.size, Total: c.total, Lines: c.lines, Tail: c.tail}
	if c.err != nil {
		r.Error = fsops.RawString(c.err.Error())
	}
	return r
}
