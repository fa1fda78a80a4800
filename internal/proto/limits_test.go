package proto

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func header(kind Kind, id, n uint32) []byte {
	var h [headerSize]byte
	h[0] = byte(kind)
	binary.BigEndian.PutUint32(h[1:5], id)
	binary.BigEndian.PutUint32(h[5:9], n)
	return h[:]
}

// A frame over its limit is refused from its header, before its payload is
// read or allocated: the payload need not even be there.
func TestReadFrameLimited(t *testing.T) {
	limit := func(k Kind, _ uint32) int { return MaxFrom(k, OpExec) }
	_, err := NewReader(bytes.NewReader(header(KindResult, 1, MaxPayload))).ReadFrameLimited(limit)
	assert.ErrorIs(t, err, ErrBadFrame)
	_, err = NewReader(bytes.NewReader(header(KindStdout, 1, ChunkSize+1))).ReadFrameLimited(limit)
	assert.ErrorIs(t, err, ErrBadFrame)
	_, err = NewReader(bytes.NewReader(header(KindAlive, 0, 1))).ReadFrameLimited(limit)
	assert.ErrorIs(t, err, ErrBadFrame)

	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.WriteFrame(KindStdout, 1, bytes.Repeat([]byte("x"), ChunkSize)))
	require.NoError(t, w.WriteFrame(KindResult, 9, []byte(`{"exit_code":0}`)))
	require.NoError(t, w.WriteFrame(KindResult, 1, []byte(`{"exit_code":3}`)))
	r := NewReader(&buf)
	f, err := r.ReadFrameLimited(limit)
	require.NoError(t, err)
	assert.Len(t, f.Payload, ChunkSize)
	// Discard skips a frame's payload, keeping the stream in step.
	f, err = r.ReadFrameLimited(func(Kind, uint32) int { return Discard })
	require.NoError(t, err)
	assert.Equal(t, Frame{Kind: KindResult, ID: 9}, f)
	f, err = r.ReadFrameLimited(limit)
	require.NoError(t, err)
	assert.Equal(t, `{"exit_code":3}`, string(f.Payload))
}

// A list of more than MaxItems items is refused before it is decoded, in
// whatever form it comes; valid lists decode as encoding/json would.
func TestListBounded(t *testing.T) {
	many := "[" + strings.Repeat("{},", MaxItems) + "{}]"
	var res Result
	err := json.Unmarshal([]byte(`{"entries":`+many+`}`), &res)
	assert.ErrorIs(t, err, ErrBadFrame)
	err = json.Unmarshal([]byte(`{"matches":`+strings.ReplaceAll(many, ",", " , ")+`}`), &res)
	assert.ErrorIs(t, err, ErrBadFrame)

	for _, c := range []struct {
		json string
		n    int
	}{
		{`null`, 0}, {`[]`, 0}, {` [ ] `, 0}, {`[{}]`, 1}, {`[{"path":"a,b]"},{"path":"\"],["}]`, 2},
		{`[{"path":"x","mode":0},{}, {} ]`, 3}, {"[\n{}\n]", 1},
	} {
		var l List[fsops.FileInfo]
		require.NoError(t, json.Unmarshal([]byte(c.json), &l), c.json)
		assert.Len(t, l, c.n, c.json)
		var want []fsops.FileInfo
		require.NoError(t, json.Unmarshal([]byte(c.json), &want))
		assert.Equal(t, want, []fsops.FileInfo(l), c.json)
	}
	var l List[int]
	assert.Error(t, json.Unmarshal([]byte(`{"a":1}`), &l))
}

// The count is exact on any array encoding/json accepts: what it checks
// is what gets allocated.
func FuzzListCount(f *testing.F) {
	for _, s := range []string{`[]`, `[1,2]`, `["a,b",[1,2],{"x":[3,4]}]`, `[ "\\",", 1 ]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want []json.RawMessage
		if json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		n, err := fsops.CountArray([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(want), n, s)
	})
}

// A writer waiting for its turn gives up when its context ends, having
// written nothing; a write that stalls calls the watch.
func TestWriteFrameContext(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	stalled := make(chan struct{})
	w.Watch(2*time.Second, func(time.Duration) bool { close(stalled); pw.CloseWithError(io.ErrClosedPipe); return true })
	blocked := make(chan error, 1)
	go func() { blocked <- w.WriteFrame(KindInput, 1, []byte("nobody reads")) }()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := w.WriteFrameContext(ctx, KindRequest, 2, []byte("{}"))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "gave up with its context, not with the stalled write")
	select {
	case <-stalled:
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled write was not reported")
	}
	assert.Error(t, <-blocked)
	pr.Close()
}

// A watch that reports a stall not the peer's is called again while the
// write still waits, and not after it ended.
func TestWriteStallExcused(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	var calls atomic.Int32
	var waited atomic.Int64
	w.Watch(50*time.Millisecond, func(d time.Duration) bool { calls.Add(1); waited.Store(int64(d)); return false })
	done := make(chan error, 1)
	go func() { done <- w.WriteFrame(KindInput, 1, []byte("read late")) }()
	for calls.Load() < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	assert.GreaterOrEqual(t, time.Duration(waited.Load()), 100*time.Millisecond, "the wait so far, not the last period")
	_, err := io.ReadFull(pr, make([]byte, 9+len("read late")))
	require.NoError(t, err)
	require.NoError(t, <-done)
	after := calls.Load()
	time.Sleep(200 * time.Millisecond)
	assert.LessOrEqual(t, calls.Load(), after+1, "called again after the write ended")
	pr.Close()
}
