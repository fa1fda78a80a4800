package proto

import (
	"encoding/binary"
	"fmt"
)

// KindResize (library → helper) carries the new size of the terminal of a
// running request (one whose Request.TTY is set) as EncodeWinsize's four
// bytes. A helper sends none: the library refuses one (MaxFrom is 0 and the
// frame is unexpected). A helper that can run commands on a terminal says
// so in its Hello (TTY); an older one does not, and is never sent this
// frame.
const KindResize Kind = 'S'

// Winsize is a terminal's size in character cells.
type Winsize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// winsizeLen is the length of an encoded Winsize.
const winsizeLen = 4

// EncodeWinsize is the payload of a KindResize frame: rows and columns,
// big-endian.
func EncodeWinsize(w Winsize) []byte {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, winsizeLen), w.Rows)
	return binary.BigEndian.AppendUint16(b, w.Cols)
}

// DecodeWinsize reads a KindResize payload.
func DecodeWinsize(b []byte) (Winsize, error) {
	if len(b) != winsizeLen {
		return Winsize{}, fmt.Errorf("%w: a resize of %d bytes, not %d", ErrBadFrame, len(b), winsizeLen)
	}
	return Winsize{Rows: binary.BigEndian.Uint16(b), Cols: binary.BigEndian.Uint16(b[2:])}, nil
}
