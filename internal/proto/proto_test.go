package proto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"testing"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.WriteFrame(KindRequest, 7, []byte(`{"op":"ls"}`)))
	require.NoError(t, w.WriteFrame(KindInput, 7, nil))
	require.NoError(t, w.WriteFrame(KindStdout, 1<<31, bytes.Repeat([]byte("x"), ChunkSize)))

	r := NewReader(&buf)
	f, err := r.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, Frame{Kind: KindRequest, ID: 7, Payload: []byte(`{"op":"ls"}`)}, f)
	f, err = r.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, Frame{Kind: KindInput, ID: 7}, f)
	f, err = r.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, uint32(1<<31), f.ID)
	assert.Len(t, f.Payload, ChunkSize)
	_, err = r.ReadFrame()
	assert.Equal(t, io.EOF, err)
}

func TestBadFrames(t *testing.T) {
	for name, data := range map[string][]byte{
		"truncated header":  {byte(KindResult), 0, 0},
		"unknown kind":      {'Z', 0, 0, 0, 1, 0, 0, 0, 0},
		"oversized payload": {byte(KindStdout), 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},
		"truncated payload": {byte(KindStdout), 0, 0, 0, 1, 0, 0, 0, 5, 'a'},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(data)).ReadFrame()
			assert.ErrorIs(t, err, ErrBadFrame)
		})
	}
	err := NewWriter(io.Discard).WriteFrame(KindStdout, 1, make([]byte, MaxPayload+1))
	assert.Error(t, err)
}

func TestErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}, CodeNotFound},
		{&fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}, CodePermission},
		{fmt.Errorf("wrapped: %w", fsops.ErrStringNotFound), CodeStringNotFound},
		{&fsops.OccurrencesError{Count: 3}, CodeMultiple},
		{errors.New("something else"), CodeInternal},
	} {
		e := ErrorOf(c.err)
		require.NotNil(t, e)
		assert.Equal(t, c.code, e.Code, c.err.Error())
		back := e.Err()
		assert.Equal(t, c.code, Code(back))
		if s := Sentinel(c.code); s != nil {
			assert.ErrorIs(t, back, s)
		}
	}
	assert.Nil(t, ErrorOf(nil))
	pe := ErrorOf(&fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist})
	assert.Equal(t, "file does not exist", pe.Message, "the path is not repeated in the message")
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{byte(KindResult), 0, 0, 0, 1, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{byte(KindHello), 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for range 100 {
			fr, err := r.ReadFrame()
			if err != nil {
				return
			}
			if len(fr.Payload) > MaxPayload {
				t.Fatalf("payload of %d bytes", len(fr.Payload))
			}
		}
	})
}
