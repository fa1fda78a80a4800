package fsops

import (
	"bufio"
	"bytes"
	"io"
	"unicode/utf8"
)

// lineBufSize is the read window of a lineReader, and so the largest chunk
// it hands out.
const lineBufSize = 64 << 10

// lineReader splits a stream into lines without ever holding a whole line:
// each line is handed out in chunks of at most lineBufSize bytes.
type lineReader struct {
	r *bufio.Reader
	// universal makes "\r\n", "\n" and a lone "\r" end a line (Python's
	// universal newlines). Otherwise only "\n" ends a line and a "\r" just
	// before it is dropped with it.
	universal bool
}

func newLineReader(r io.Reader, universal bool) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, lineBufSize), universal: universal}
}

// readLine streams the next line, without its terminator, to emit. emit is
// called at least once for every line (with an empty chunk for an empty
// line); a chunk is only valid during the call and never ends inside a
// UTF-8 sequence that continues in the next chunk. If emit returns false,
// readLine returns at once and the reader must not be used again.
// ok is false when no line is left.
func (lr *lineReader) readLine(emit func([]byte) bool) (ok bool, err error) {
	for {
		buf, err := lr.r.Peek(lineBufSize)
		if len(buf) == 0 {
			if err == io.EOF {
				err = nil
			}
			return ok, err
		}
		ok = true
		more := err == nil // the window is full, more bytes may follow
		i := lr.terminator(buf)
		if i < 0 || (buf[i] == '\r' && lr.universal && i+1 == len(buf) && more) {
			// No complete terminator in the window: hand out what is safe.
			n := len(buf)
			if i >= 0 {
				n = i // keep the "\r": it may start a "\r\n"
			} else if more {
				if !lr.universal && buf[n-1] == '\r' {
					n--
				}
				n -= partialRuneLen(buf[:n])
			}
			if !emit(buf[:n]) {
				return true, nil
			}
			_, _ = lr.r.Discard(n)
			continue
		}
		end, skip := i, i+1
		switch {
		case buf[i] == '\r':
			if i+1 < len(buf) && buf[i+1] == '\n' {
				skip++
			}
		case !lr.universal && i > 0 && buf[i-1] == '\r':
			end--
		}
		emit(buf[:end])
		_, _ = lr.r.Discard(skip)
		return true, nil
	}
}

// terminator returns the index of the first line terminator byte in buf, or -1.
func (lr *lineReader) terminator(buf []byte) int {
	if lr.universal {
		return bytes.IndexAny(buf, "\r\n")
	}
	return bytes.IndexByte(buf, '\n')
}

// more reports whether any byte is left, i.e. whether another line follows.
func (lr *lineReader) more() (bool, error) {
	_, err := lr.r.Peek(1)
	if err == io.EOF {
		return false, nil
	}
	return err == nil, err
}

// countLines consumes the rest of the stream and returns its number of lines.
func (lr *lineReader) countLines() (int, error) {
	n := 0
	for {
		ok, err := lr.readLine(func([]byte) bool { return true })
		if err != nil || !ok {
			return n, err
		}
		n++
	}
}

// partialRuneLen returns the length of an incomplete (but so far valid)
// UTF-8 sequence at the end of b, or 0.
func partialRuneLen(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		c := b[len(b)-k]
		if utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// cutUTF8 returns the largest k <= n such that b[:k] does not end inside a
// UTF-8 sequence.
func cutUTF8(b []byte, n int) int {
	if n >= len(b) {
		return len(b)
	}
	if n <= 0 {
		return 0
	}
	return n - partialRuneLen(b[:n])
}

// validUTF8Prefix reports whether b is valid UTF-8, tolerating an incomplete
// multi-byte sequence at its very end (like Python's incremental decoder).
func validUTF8Prefix(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return !utf8.FullRune(b[i:])
		}
		i += size
	}
	return true
}
