package sandbox

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// DefaultReadLimit is how many lines Read returns unless told otherwise.
const DefaultReadLimit = 2000

// ReadResult is one page of a file.
type ReadResult struct {
	// Content is the page's lines joined by "\n" (CRLF and CR line ends
	// become "\n"), or the whole file in base64 for images, audio, video,
	// PDFs and other binary files.
	Content string
	// Encoding is "utf-8" or "base64".
	Encoding string
	// TotalLines is the file's line count, or -1 when the page ended early
	// in a file over 1 MiB and the count was not taken.
	TotalLines int
	// StartLine and EndLine are the 1-based lines on the page (0 when none).
	StartLine, EndLine int
	// NextOffset is the offset to read the next page from, or -1 at the end.
	NextOffset int
	// NoLinesRequested reports a read with a limit of 0.
	NoLinesRequested bool
	// Truncated reports that the page hit the byte cap (512000 bytes) and
	// ends with a note saying so.
	Truncated bool
}

// A ReadOption adjusts Read.
type ReadOption func(*readConfig) error

type readConfig struct{ offset, limit int }

// Offset starts the page at this 0-based line.
func Offset(line int) ReadOption {
	return func(c *readConfig) error {
		if line < 0 {
			return fmt.Errorf("sandbox: read offset %d is negative", line)
		}
		c.offset = line
		return nil
	}
}

// Limit returns at most this many lines (default DefaultReadLimit).
func Limit(lines int) ReadOption {
	return func(c *readConfig) error {
		if lines < 0 {
			return fmt.Errorf("sandbox: read limit %d is negative", lines)
		}
		c.limit = lines
		return nil
	}
}

// Read returns a page of the file at path, with deepagents' rules: an
// empty file reads as a reminder text, binary and media files as base64
// (up to 512000 bytes), text as lines; an offset past the end is
// ErrOffsetOutOfRange. Memory stays bounded whatever the file's size or
// line length.
func (s *DockerSandbox) Read(ctx context.Context, path string, opts ...ReadOption) (ReadResult, error) {
	cfg := readConfig{limit: DefaultReadLimit}
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return ReadResult{}, err
		}
	}
	p, err := s.abs("read", path)
	if err != nil {
		return ReadResult{}, err
	}
	res, err := s.fileCall(ctx, "read", p, proto.Request{Op: proto.OpRead, Path: p, Offset: cfg.offset, Limit: cfg.limit}, nil)
	if err != nil {
		return ReadResult{}, err
	}
	if res.Read == nil {
		return ReadResult{}, fmt.Errorf("%w: read answered without a page", ErrHelper)
	}
	r := res.Read
	return ReadResult{
		Content: r.Content, Encoding: r.Encoding, TotalLines: r.TotalLines,
		StartLine: r.StartLine, EndLine: r.EndLine, NextOffset: r.NextOffset,
		NoLinesRequested: r.NoLinesRequested, Truncated: r.Truncated,
	}, nil
}
