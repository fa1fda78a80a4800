package fsops

import (
	"bytes"
	"encoding/base64"
	"io"
	"io/fs"
	"path"
	"strings"
)

// MaxPageBytes is the byte budget of one Read page, including the truncation message.
const MaxPageBytes = 512000

// MaxBinaryBytes is the size of the largest file Read returns base64-encoded.
const MaxBinaryBytes = 512000

const (
	// sniffBytes is how much of a file is inspected to tell text from binary.
	sniffBytes = 8192
	// totalLinesMaxSize is the largest file whose lines are counted past the page.
	totalLinesMaxSize = 1 << 20
	// maxOverflowScan bounds how much of a line that overflowed the page is
	// read looking for its end; past it, TotalLines is -1 and NextOffset
	// the line after (reading from there must still skip the whole line).
	maxOverflowScan = 64 << 20

	emptyFileReminder = "System reminder: File exists but has empty contents"
	truncationMsg     = "\n\n[Output was truncated due to size limits. This paginated read result exceeded the sandbox stdout limit. Continue reading with a larger offset or smaller limit to inspect the rest of the file.]"
)

// mediaExts are the extensions deepagents 0.7 returns as base64 whole files.
var mediaExts = map[string]bool{
	".png": true, ".jpeg": true, ".jpg": true, ".webp": true, ".gif": true, ".heic": true, ".heif": true,
	".mp4": true, ".mpeg": true, ".mov": true, ".avi": true, ".flv": true, ".mpg": true, ".webm": true,
	".wmv": true, ".3gpp": true, ".mkv": true,
	".wav": true, ".mp3": true, ".aiff": true, ".aac": true, ".ogg": true, ".flac": true,
	".pdf": true, ".ppt": true, ".pptx": true,
}

// ReadResult is one page of a file (or the whole file, base64-encoded).
type ReadResult struct {
	Content          string
	Encoding         string // "utf-8" or "base64"
	TotalLines       int    // -1 when unknown
	StartLine        int    // 1-based; 0 when no lines returned
	EndLine          int
	NextOffset       int // -1 when no lines remain
	NoLinesRequested bool
	Truncated        bool // the page byte budget cut the content
}

// Read returns up to limit lines of the file name starting after offset
// lines, with the deepagents 0.7 rules: an empty file gives the empty-file
// reminder; media files (by extension) and files whose first 8192 bytes are
// not UTF-8 come back whole as base64 (or fail with ErrBinaryTooLarge above
// MaxBinaryBytes); limit <= 0 reads nothing (NoLinesRequested); "\r\n" and a
// lone "\r" end lines; lines are joined by "\n" without a trailing newline;
// a page never exceeds MaxPageBytes (an overflowing line is cut and followed
// by the truncation message); offset >= the line count fails with
// ErrOffsetOutOfRange. Negative offset and limit count as 0. TotalLines is
// -1 only when the page stopped before EOF in a file over 1 MiB. Memory use
// is bounded whatever the file's size or line length.
func Read(fsys fs.FS, name string, offset, limit int) (ReadResult, error) {
	const op = "read"
	rel, err := fsPath(op, name)
	if err != nil {
		return ReadResult{}, err
	}
	info, err := fs.Stat(fsys, rel)
	switch {
	case err != nil:
		return ReadResult{}, pathError(op, name, err)
	case info.IsDir():
		return ReadResult{}, &fs.PathError{Op: op, Path: name, Err: errDirectory}
	case !info.Mode().IsRegular():
		return ReadResult{}, &fs.PathError{Op: op, Path: name, Err: ErrNotRegular}
	case info.Size() == 0:
		return ReadResult{Content: emptyFileReminder, Encoding: "utf-8", NextOffset: -1}, nil
	}
	media := mediaExts[strings.ToLower(path.Ext(rel))]
	if media && info.Size() > MaxBinaryBytes {
		return ReadResult{}, &fs.PathError{Op: op, Path: name, Err: &binaryTooLargeError{MaxBinaryBytes}}
	}
	f, err := fsys.Open(rel)
	if err != nil {
		return ReadResult{}, pathError(op, name, err)
	}
	defer f.Close()

	var res ReadResult
	if media {
		res, err = readBase64(f)
	} else {
		res, err = readText(f, info.Size(), max(offset, 0), max(limit, 0))
	}
	if err != nil {
		return ReadResult{}, pathError(op, name, err)
	}
	return res, nil
}

// readText sniffs the start of r and returns either the whole file base64
// (binary) or one text page.
func readText(r io.Reader, size int64, offset, limit int) (ReadResult, error) {
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return ReadResult{}, err
	}
	head = head[:n]
	rest := io.MultiReader(bytes.NewReader(head), r)
	if !validUTF8Prefix(head) {
		if size > MaxBinaryBytes {
			return ReadResult{}, &binaryTooLargeError{MaxBinaryBytes}
		}
		return readBase64(rest)
	}
	if limit == 0 {
		return ReadResult{Encoding: "utf-8", TotalLines: -1, NextOffset: -1, NoLinesRequested: true}, nil
	}
	return readPage(newLineReader(rest, true), size, offset, limit)
}

// readBase64 returns all of r base64-encoded, refusing more than MaxBinaryBytes.
func readBase64(r io.Reader) (ReadResult, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBinaryBytes+1))
	if err != nil {
		return ReadResult{}, err
	}
	if len(data) > MaxBinaryBytes {
		return ReadResult{}, &binaryTooLargeError{MaxBinaryBytes}
	}
	return ReadResult{
		Content:    base64.StdEncoding.EncodeToString(data),
		Encoding:   "base64",
		TotalLines: -1,
		NextOffset: -1,
	}, nil
}

// readPage skips offset lines of lr and returns the next limit (>= 1) lines
// within the page byte budget.
func readPage(lr *lineReader, size int64, offset, limit int) (ReadResult, error) {
	for skipped := 0; skipped < offset; skipped++ {
		ok, err := lr.readLine(func([]byte) bool { return true })
		if err != nil {
			return ReadResult{}, err
		}
		if !ok {
			return ReadResult{}, &offsetError{offset: offset, lines: skipped}
		}
	}

	var b strings.Builder
	budget := MaxPageBytes - len(truncationMsg)
	returned, truncated := 0, false
	overflow := 0 // bytes of the overflowing line consumed after the cut
	for returned < limit && !truncated {
		sep := returned > 0
		ok, err := lr.readLine(func(c []byte) bool {
			if truncated {
				// Consume the rest of the overflowing line, to know where
				// the next one starts, but not forever: a 10 GiB line
				// (a sparse file, say) would take a minute.
				overflow += len(c)
				return overflow < maxOverflowScan
			}
			if sep {
				if b.Len()+1 > budget {
					truncated = true
					return true
				}
				b.WriteByte('\n')
				sep = false
			}
			if room := budget - b.Len(); len(c) > room {
				b.Write(c[:cutUTF8(c, room)])
				truncated = true
				return true
			}
			b.Write(c)
			return true
		})
		if err != nil {
			return ReadResult{}, err
		}
		if !ok {
			break
		}
		if !truncated {
			returned++
		}
	}
	if returned == 0 && !truncated {
		return ReadResult{}, &offsetError{offset: offset, lines: offset}
	}

	// Lines consumed so far, counting a partly returned one.
	consumed := offset + returned
	end := offset + returned
	if truncated {
		consumed++
		if returned == 0 {
			end++ // even the first line overflowed: skip past it
		}
		b.WriteString(truncationMsg)
	}
	total := -1 // unknown when the overflowing line was not consumed to its end
	if overflow < maxOverflowScan {
		var err error
		if total, err = totalLines(lr, size, consumed); err != nil {
			return ReadResult{}, err
		}
	}
	next := -1
	if total < 0 || end < total {
		next = end
	}
	return ReadResult{
		Content:    b.String(),
		Encoding:   "utf-8",
		TotalLines: total,
		StartLine:  offset + 1,
		EndLine:    end,
		NextOffset: next,
		Truncated:  truncated,
	}, nil
}

// totalLines returns the file's line count given that consumed lines were
// read, or -1 when lines remain in a file larger than 1 MiB.
func totalLines(lr *lineReader, size int64, consumed int) (int, error) {
	more, err := lr.more()
	if err != nil {
		return 0, err
	}
	if !more {
		return consumed, nil
	}
	if size > totalLinesMaxSize {
		return -1, nil
	}
	n, err := lr.countLines()
	return consumed + n, err
}
