package helper

import "github.com/dockersandbox/sandbox/internal/proto"

// heldOutput sends a request's frames, holding back its last output frame
// (of at most proto.ChunkSize bytes) to write it with the Result in one
// write: a small read then costs the library one message, not two. Only
// for requests whose output is all there at once (a file's or a process
// log's bytes: proto.HoldsOutput), never a command's, whose output must go
// as it comes.
type heldOutput struct {
	w    *proto.Writer
	id   uint32
	held []byte
	has  bool
}

// send writes the frame held before, if any, and holds or writes this one.
func (h *heldOutput) send(k proto.Kind, p []byte) error {
	if h.has {
		h.has = false
		if err := h.w.WriteFrame(proto.KindStdout, h.id, h.held); err != nil {
			return err
		}
	}
	if k == proto.KindStdout && len(p) <= proto.ChunkSize {
		h.held, h.has = append(h.held[:0], p...), true
		return nil
	}
	return h.w.WriteFrame(k, h.id, p)
}

// result writes the held frame, if any, and the Result res in one write.
func (h *heldOutput) result(res []byte) error {
	if !h.has {
		return h.w.WriteFrame(proto.KindResult, h.id, res)
	}
	h.has = false
	return h.w.WriteFrames(proto.Frame{Kind: proto.KindStdout, ID: h.id, Payload: h.held}, proto.Frame{Kind: proto.KindResult, ID: h.id, Payload: res})
}
