package helper

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// A batch of watch events never exceeds the credit it was cut for, at
// every size: one byte beyond breaks the library's channel (CI saw "2136
// bytes of data beyond its credit of 2135" in a 10,000-file burst).
func TestFillBatchWithinCredit(t *testing.T) {
	var queue []proto.WatchEvent
	for i := range 50 {
		queue = append(queue, proto.WatchEvent{Op: proto.WatchCreate, Path: fsops.RawString("/workspace/burst/f" + strconv.Itoa(i))})
	}
	first, _ := json.Marshal(queue[0])
	var batch []byte
	for n := len(first) + 2; n < 4096; n++ {
		var k int
		batch, k = fillBatch(batch, queue, n)
		if len(batch) > n {
			t.Fatalf("credit %d: a batch of %d bytes (%d events)", n, len(batch), k)
		}
		if k == 0 {
			t.Fatalf("credit %d: the first event (%d bytes) did not fit", n, len(first))
		}
		var got []proto.WatchEvent
		if err := json.Unmarshal(batch, &got); err != nil || len(got) != k {
			t.Fatalf("credit %d: %d events decoded of %d (%v)", n, len(got), k, err)
		}
	}
}
