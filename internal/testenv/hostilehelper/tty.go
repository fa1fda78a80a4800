package main

import (
	"encoding/json"
	"io"
	"os"
	"runtime"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The terminal modes: a hello that says the helper has terminals
// (Hello.TTY, CapTTY), then
//
//	tty-resize  answers every request with a KindResize frame (which only
//	            the library sends) of 4 bytes, then a Result
//	tty-garbage answers every request with a KindResize frame of 1 MiB
//	tty-deaf    reads the first request, then nothing more (resizes and
//	            input pile up in the connection), never answers
func (h *helper) tty(in io.Reader) error {
	b, _ := json.Marshal(proto.Hello{Version: proto.Version, Session: os.Getpid(), UID: os.Getuid(), GID: os.Getgid(), Arch: runtime.GOARCH, TTY: true, Caps: proto.Capabilities()})
	if err := h.frame(byte(proto.KindHello), 0, b); err != nil {
		return err
	}
	for {
		kind, id, _, err := readFrame(in)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if kind != byte(proto.KindRequest) {
			continue
		}
		switch h.mode {
		case "tty-deaf":
			return silence(in)
		case "tty-garbage":
			if err := h.frame(byte(proto.KindResize), id, make([]byte, 1<<20)); err != nil {
				return err
			}
		default:
			if err := h.frame(byte(proto.KindResize), id, proto.EncodeWinsize(proto.Winsize{Rows: 1, Cols: 1})); err != nil {
				return err
			}
		}
		if err := h.frame(byte(proto.KindResult), id, []byte(`{"exit_code":0}`)); err != nil {
			return err
		}
	}
}
