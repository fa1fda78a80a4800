package proto

import (
	"encoding/binary"
	"fmt"
)

// Streams: a dial or a watch request stays open as a stream of data frames
// in both directions until its Result. Each direction has its own credit:
// a side sends KindData only within the bytes the other side granted
// (StreamWindow at the start, then every KindWindow), so a reader that
// stops reading stops its stream and never the shared channel; data beyond
// the credit breaks the protocol.
//
//	library → helper: Request (OpDial/OpWatch/OpAccept), then, once the helper sent
//	  KindOpen, KindData within credit, KindEOF (half-close), KindWindow;
//	  KindCancel closes the stream.
//	helper → library: KindOpen (established), KindData within credit,
//	  KindEOF, KindWindow; Result ends the stream (an error: a reset).

// Stream frame kinds.
const (
	KindData   Kind = 'D' // both ways: stream bytes, within credit
	KindWindow Kind = 'W' // both ways: a uint32 credit grant, in bytes
	KindEOF    Kind = 'F' // both ways: the sender writes no more (half-close)
	KindOpen   Kind = 'U' // helper → library: the stream is established (StreamOpen JSON)
)

// Stream operations.
const (
	OpDial   = "dial"   // Network, Address: a connection inside the sandbox
	OpWatch  = "watch"  // Path, Recursive: inotify events as WatchEvent batches
	OpAccept = "accept" // Network, Address: the next connection to the helper's listener there
)

// StreamWindow is the credit each side of a stream of op starts with, in
// bytes: what the other side may send before it hears a KindWindow. A
// watch's is small, so that a consumer that stops reading makes the helper
// drop events (and say so) instead of buffering many.
func StreamWindow(op string) int {
	if op == OpWatch {
		return 64 << 10
	}
	return 1 << 20
}

// StreamChunk bounds the payload of one KindData frame.
const StreamChunk = 64 << 10

// maxOpen bounds a KindOpen payload.
const maxOpen = 1 << 10

// StreamOpen is the payload of KindOpen.
type StreamOpen struct {
	Local  string `json:"local,omitempty"`  // dial: the connection's local address in the sandbox
	Remote string `json:"remote,omitempty"` // dial: its remote address
	// Direct: the connection goes over the library's socket (Request.Direct),
	// which the library acknowledged; no data frames follow, the Result
	// still ends the stream.
	Direct bool `json:"direct,omitempty"`
}

// DirectTokenSize is the size of a direct connection's token, which the
// helper writes first on the library's socket; the library answers
// DirectAck once it took the connection.
const DirectTokenSize = 16

// DirectAck is the byte the library writes on a direct connection it took.
const DirectAck = 0x06

// Codes of a stream's Result error.
const (
	CodeRefused     = "connection_refused"
	CodeReset       = "connection_reset"
	CodeTimedOut    = "timed_out"
	CodeUnreachable = "unreachable"
	CodeNoHost      = "no_such_host"
	CodeDial        = "dial_failed"
)

// maxStreamFrom is MaxFrom for the stream kinds.
func maxStreamFrom(kind Kind, op string) int {
	if !IsStream(op) {
		return 0 // one empty frame still breaks the protocol, for the library to see
	}
	switch kind {
	case KindData:
		return StreamChunk
	case KindWindow:
		return 4
	case KindOpen:
		return maxOpen
	}
	return 0
}

// streamKind reports whether k is one of the stream kinds.
func streamKind(k Kind) bool {
	return k == KindData || k == KindWindow || k == KindEOF || k == KindOpen
}

// Window encodes a credit grant of n bytes.
func Window(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// ParseWindow decodes a KindWindow payload.
func ParseWindow(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("%w: window of %d bytes", ErrBadFrame, len(p))
	}
	return int(binary.BigEndian.Uint32(p)), nil
}

// DirectServeMode is the helper's mode that opens the shared channel over
// the library's socket: argv [shared copy, DirectServeMode, socket, helper
// path]. It reads a token (DirectTokenSize bytes) from standard input,
// introduces a connection to the socket with it, and once the library
// acknowledged it, executes the helper at its path in serve mode with the
// connection as standard input and output (standard error stays the
// exec's). It exits 1, saying why on standard error, if it could not.
const DirectServeMode = "serve-direct"

// ShareDir is where a sandbox sees the directory the library shares with
// it (read-only): the port socket, the helper's copy, and the first
// channel's token.
const ShareDir = "/run/dockersandbox"

// PortsSocket is the library's socket in ShareDir.
const PortsSocket = ShareDir + "/ports.sock"

// FirstChannelFile, when New shares it, holds a one-time token (hex) with
// which PID 1 introduces a connection to PortsSocket before it writes
// ReadyLine, and keeps it: the library's first shared channel. New removes
// the file once the container started.
const FirstChannelFile = ShareDir + "/channel"

// FirstChannelStart is the byte the library writes on the first channel's
// connection when it opens the shared channel: PID 1 then starts the
// helper at its path in serve mode on the connection (its own session, in
// "/", stderr /dev/null).
const FirstChannelStart = 's'
