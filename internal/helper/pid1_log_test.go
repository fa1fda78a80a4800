package helper

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The output log keeps exactly the latest size bytes of what was written,
// in order, whatever the sizes of the writes, and its memory never
// exceeds size.
func TestProcLog(t *testing.T) {
	for _, size := range []int{1024, 4096, 5000, 1 << 16} {
		l := procLog{size: size}
		var all []byte
		r := rand.New(rand.NewPCG(1, uint64(size)))
		for range 500 {
			p := make([]byte, r.IntN(3*size))
			for i := range p {
				p[i] = byte(r.IntN(256))
			}
			l.write(p)
			all = append(all, p...)
			if cap(l.buf) > size {
				t.Fatalf("size %d: the log holds %d bytes", size, cap(l.buf))
			}
			if l.total != int64(len(all)) {
				t.Fatalf("size %d: total %d, wrote %d", size, l.total, len(all))
			}
			base := l.base()
			if want := int64(max(0, len(all)-size)); base != want {
				t.Fatalf("size %d: base %d, want %d", size, base, want)
			}
			c := base + int64(r.IntN(int(l.total-base)+1))
			got := l.read(c, size)
			if !bytes.Equal(got, all[c:]) {
				t.Fatalf("size %d: read from %d differs", size, c)
			}
			if got := l.read(c, 7); !bytes.Equal(got, all[c:min(int64(len(all)), c+7)]) {
				t.Fatalf("size %d: short read from %d differs", size, c)
			}
		}
	}
}
