package main

import (
	"bytes"
	"encoding/json"
	"net"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The stream modes answer dial and watch requests (and every other
// request honestly):
//
//	stream-flood    opens the stream, then sends data frames for ever,
//	                far beyond the credit the library granted (for a
//	                watch: batches of events)
//	stream-unknown  opens the stream, sends 64 MiB of data and windows for
//	                streams that do not exist, then ends the stream cleanly
//	stream-old      a helper that predates streams: its hello announces
//	                no capabilities (the library then sends no stream
//	                request), and it answers one with unknown operation
//	direct-lie      opens a dial's stream claiming a direct connection
//	                (over the library's port socket) that it never made
//	direct-wrong    connects to the port socket, introduces the connection
//	                with a token that is not the dial's, then opens the
//	                stream claiming it direct

// streamAnswer answers req in a stream mode; handled is false in others.
func (h *helper) streamAnswer(id uint32, req proto.Request) (handled bool, err error) {
	switch h.mode {
	case "stream-flood", "stream-unknown", "stream-old", "direct-lie", "direct-wrong":
	default:
		return false, nil
	}
	result := func(res proto.Result) error {
		b, _ := json.Marshal(res)
		return h.frame(byte(proto.KindResult), id, b)
	}
	if !proto.IsStream(req.Op) {
		return true, h.frame(byte(proto.KindResult), id, honest(req))
	}
	if h.mode == "stream-old" {
		return true, result(proto.Result{Error: &proto.Error{Code: proto.CodeBadRequest, Message: `unknown operation "` + req.Op + `"`}})
	}
	if h.mode == "direct-lie" || h.mode == "direct-wrong" {
		if req.Op != proto.OpDial {
			return true, h.frame(byte(proto.KindResult), id, honest(req))
		}
		if h.mode == "direct-wrong" && req.Direct != "" {
			if c, err := net.DialTimeout("unix", string(req.Direct), 2*time.Second); err == nil {
				defer c.Close()
				_, _ = c.Write(bytes.Repeat([]byte{0x5a}, proto.DirectTokenSize))
			}
		}
		return true, h.frame(byte(proto.KindOpen), id, []byte(`{"local":"127.0.0.1:1","remote":"127.0.0.1:2","direct":true}`))
	}
	if err := h.frame(byte(proto.KindOpen), id, []byte(`{"local":"127.0.0.1:1","remote":"127.0.0.1:2"}`)); err != nil {
		return true, err
	}
	data := bytes.Repeat([]byte("z"), proto.StreamChunk)
	if req.Op == proto.OpWatch {
		ev, _ := json.Marshal(proto.WatchEvent{Path: "/flood", Op: proto.WatchCreate})
		batch := append([]byte{'['}, ev...)
		for len(batch)+len(ev)+2 < proto.StreamChunk {
			batch = append(append(batch, ','), ev...)
		}
		data = append(batch, ']')
	}
	if h.mode == "stream-flood" {
		go func() {
			for h.frame(byte(proto.KindData), id, data) == nil {
			}
		}()
		return true, nil
	}
	for sent := 0; sent < 64<<20; sent += len(data) {
		if err := h.frame(byte(proto.KindData), id+1000, data); err != nil {
			return true, err
		}
		if err := h.frame(byte(proto.KindWindow), id+1001, proto.Window(1<<30)); err != nil {
			return true, err
		}
	}
	return true, result(proto.Result{})
}
