package helper

import (
	"bytes"
	"testing"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// writes records each Write as one message.
type writes struct{ msgs [][]byte }

func (w *writes) Write(p []byte) (int, error) {
	w.msgs = append(w.msgs, append([]byte(nil), p...))
	return len(p), nil
}

// frames decodes the frames of the messages, all together.
func (w *writes) frames(t *testing.T) []proto.Frame {
	t.Helper()
	r := proto.NewReader(bytes.NewReader(bytes.Join(w.msgs, nil)))
	var out []proto.Frame
	for {
		f, err := r.ReadFrame()
		if err != nil {
			return out
		}
		out = append(out, f)
	}
}

// The last output frame of a held request goes out with its Result, in one
// write; every earlier frame goes out, in order, before it.
func TestHeldOutput(t *testing.T) {
	big := bytes.Repeat([]byte("b"), proto.ChunkSize+1)
	for _, tc := range []struct {
		name   string
		sends  [][]byte
		writes int
	}{
		{"none", nil, 1},
		{"one small", [][]byte{[]byte("tick\n")}, 1},
		{"two small", [][]byte{[]byte("a"), []byte("b")}, 2},
		{"a large one last", [][]byte{[]byte("a"), big}, 3},
		{"empty", [][]byte{{}}, 1},
	} {
		w := &writes{}
		h := &heldOutput{w: proto.NewWriter(w), id: 7}
		for _, p := range tc.sends {
			if err := h.send(proto.KindStdout, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.result([]byte("{}")); err != nil {
			t.Fatal(err)
		}
		if len(w.msgs) != tc.writes {
			t.Errorf("%s: %d writes, want %d", tc.name, len(w.msgs), tc.writes)
		}
		fs := w.frames(t)
		if len(fs) != len(tc.sends)+1 {
			t.Fatalf("%s: %d frames, want %d", tc.name, len(fs), len(tc.sends)+1)
		}
		for i, p := range tc.sends {
			if fs[i].Kind != proto.KindStdout || fs[i].ID != 7 || !bytes.Equal(fs[i].Payload, p) {
				t.Errorf("%s: frame %d is %q %d (%d bytes)", tc.name, i, fs[i].Kind, fs[i].ID, len(fs[i].Payload))
			}
		}
		if last := fs[len(fs)-1]; last.Kind != proto.KindResult || last.ID != 7 || string(last.Payload) != "{}" {
			t.Errorf("%s: last frame %q %d %q, want the Result", tc.name, last.Kind, last.ID, last.Payload)
		}
	}
}
