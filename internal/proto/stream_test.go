package proto

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reader takes the stream kinds; MaxFrom bounds them by operation:
// data up to StreamChunk, a window 4 bytes, an open 1 KiB, an EOF nothing,
// and nothing at all for a request that is no stream.
func TestStreamFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.WriteFrame(KindData, 1, bytes.Repeat([]byte("d"), StreamChunk)))
	require.NoError(t, w.WriteFrame(KindWindow, 1, Window(12345)))
	require.NoError(t, w.WriteFrame(KindEOF, 1, nil))
	require.NoError(t, w.WriteFrame(KindOpen, 1, []byte(`{"local":"a","remote":"b"}`)))
	r := NewReader(&buf)
	limit := func(k Kind, _ uint32) int { return MaxFrom(k, OpDial) }
	for _, want := range []Kind{KindData, KindWindow, KindEOF, KindOpen} {
		f, err := r.ReadFrameLimited(limit)
		require.NoError(t, err)
		assert.Equal(t, want, f.Kind)
		if want == KindWindow {
			n, err := ParseWindow(f.Payload)
			require.NoError(t, err)
			assert.Equal(t, 12345, n)
		}
	}

	assert.Equal(t, StreamChunk, MaxFrom(KindData, OpWatch))
	assert.Equal(t, 4, MaxFrom(KindWindow, OpDial))
	assert.Equal(t, 0, MaxFrom(KindEOF, OpDial))
	assert.Equal(t, maxOpen, MaxFrom(KindOpen, OpDial))
	for _, k := range []Kind{KindData, KindWindow, KindOpen} {
		assert.Zero(t, MaxFrom(k, OpExec), "%q for exec", k)
	}
	// Over the limit: refused before the payload is read.
	buf.Reset()
	require.NoError(t, w.WriteFrame(KindData, 1, make([]byte, StreamChunk+1)))
	_, err := NewReader(&buf).ReadFrameLimited(limit)
	assert.ErrorIs(t, err, ErrBadFrame)
	_, err = ParseWindow([]byte{1, 2, 3})
	assert.ErrorIs(t, err, ErrBadFrame)
	assert.Greater(t, StreamWindow(OpDial), StreamWindow(OpWatch))
}
