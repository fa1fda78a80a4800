package helper

// procLog is a process's output log: the latest size bytes of its output,
// addressed by a cursor that counts every byte the process wrote. Its
// memory grows with the output, up to size.
type procLog struct {
	buf   []byte
	size  int
	total int64 // bytes written since the start
}

// write appends p, dropping the oldest bytes beyond size.
func (l *procLog) write(p []byte) {
	for len(p) > 0 {
		if len(l.buf) < l.size { // still growing: append
			n := min(len(p), l.size-len(l.buf))
			if cap(l.buf)-len(l.buf) < n {
				grown := make([]byte, len(l.buf), min(l.size, max(2*cap(l.buf), len(l.buf)+n, 4096)))
				copy(grown, l.buf)
				l.buf = grown
			}
			l.buf = append(l.buf, p[:n]...)
			l.total += int64(n)
			p = p[n:]
			continue
		}
		at := int(l.total % int64(l.size))
		n := copy(l.buf[at:], p)
		l.total += int64(n)
		p = p[n:]
	}
}

// base is the cursor of the oldest byte held.
func (l *procLog) base() int64 { return l.total - int64(len(l.buf)) }

// read copies out at most max bytes from cursor c, which must be within
// [base, total].
func (l *procLog) read(c int64, max int) []byte {
	n := int(min(l.total-c, int64(max)))
	out := make([]byte, n)
	if len(l.buf) < l.size { // not wrapped: index = cursor
		copy(out, l.buf[c:])
		return out
	}
	at := int(c % int64(l.size))
	k := copy(out, l.buf[at:])
	copy(out[k:], l.buf)
	return out
}
