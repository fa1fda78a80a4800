package proto

import "sync"

// Stream data frames are read into buffers of StreamChunk bytes taken from
// a pool, and written from a buffer the Writer keeps: a stream moving
// hundreds of megabytes then allocates (and faults in) almost no new
// memory. A reader that is done with a KindData payload hands it back with
// ReleaseData; one that keeps it (or never calls ReleaseData) only makes
// the pool allocate again.

var dataPool = sync.Pool{New: func() any { b := make([]byte, StreamChunk); return &b }}

// dataBuffer returns a buffer of n bytes (at most StreamChunk) from the pool.
func dataBuffer(n int) []byte {
	b := dataPool.Get().(*[]byte)
	return (*b)[:n]
}

// ReleaseData gives the payload of a KindData frame back to the pool, for
// a later frame: the caller must not use p (or what it was sliced from)
// afterwards. Slices of other buffers are ignored.
func ReleaseData(p []byte) {
	if cap(p) != StreamChunk {
		return
	}
	p = p[:StreamChunk]
	dataPool.Put(&p)
}

// maxKeptFrame bounds the frame buffer a Writer keeps between writes.
const maxKeptFrame = 2*StreamChunk + headerSize
