package proto

import (
	"bytes"
	"errors"
	"testing"
)

// A resize round-trips, a payload of another length is ErrBadFrame, and
// the reader takes KindResize frames (the helper's reader must), while the
// library accepts none from a helper (MaxFrom is 0).
func TestWinsizeFrames(t *testing.T) {
	w := Winsize{Rows: 513, Cols: 65535}
	got, err := DecodeWinsize(EncodeWinsize(w))
	if err != nil || got != w {
		t.Fatalf("DecodeWinsize(EncodeWinsize(%v)) = %v, %v", w, got, err)
	}
	for _, b := range [][]byte{nil, {1, 2, 3}, {1, 2, 3, 4, 5}} {
		if _, err := DecodeWinsize(b); !errors.Is(err, ErrBadFrame) {
			t.Errorf("DecodeWinsize(%v) = %v, want ErrBadFrame", b, err)
		}
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).WriteFrame(KindResize, 7, EncodeWinsize(w)); err != nil {
		t.Fatal(err)
	}
	f, err := NewReader(bytes.NewReader(buf.Bytes())).ReadFrame()
	if err != nil || f.Kind != KindResize || f.ID != 7 {
		t.Fatalf("ReadFrame = %+v, %v", f, err)
	}
	if n := MaxFrom(KindResize, OpExec); n != 0 {
		t.Errorf("MaxFrom(KindResize) = %d, want 0: a helper sends no resize", n)
	}
}
