package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// The modes. Unless said otherwise, a mode sends a valid hello first, and
// the helper leaves when its input ends.
//
//	silent          no hello, never reads its input, never leaves
//	stopped         SIGSTOPs itself after the hello
//	slow N          answers every request after N seconds, silent meanwhile
//	hello-only      reads requests, never answers, never says it is alive
//	flood-entries   answers every request with a 64 MiB Result of millions
//	                of empty entries ({"entries":[{},{},...]})
//	flood-matches   likewise with matches
//	flood-stats     likewise with stats
//	flood-read      a 64 MiB read page
//	flood-error     a 64 MiB error message
//	flood-stdout    four 64 MiB Stdout frames, then a Result
//	flood-fit       as many items as the library may accept (199999), as
//	                long as fits in 16 MiB, in the field of the request's op
//	lie-capture     answers an exec with a capture above its cap and a
//	                64 KiB tail
//	lie-cat MIB CH  stat says 10 bytes; cat sends MIB MiB in Stdout frames of
//	                CH bytes (far more than its Limit), then a Result
//	lie-id          answers every request with a Result for another ID
//	dup-result      answers every request twice
//	unknown-kind    answers every request with a frame of an unknown kind
//	bad-version     a hello of protocol version 99
//	garbage         bytes before the hello
//	truncated       answers with a Result frame cut short, then is silent
//	truncated-hello a hello cut short, then silent
//	bad-length      answers with a frame claiming 4 GiB
//	endless         answers every request with Stdout frames, for ever
//	egress-forge    forges the connections of the sandbox's egress (egress.go)
type helper struct {
	mode string
	args []string
	mu   sync.Mutex // orders frames
	out  io.Writer
}

const (
	flood    = 64 << 20 // the largest payload of the protocol (proto.MaxPayload as it was)
	fitBytes = 16<<20 - 64<<10
	fitItems = 199_999
	chunk    = 32 << 10
)

// frame writes one frame; header and payload in one write.
func (h *helper) frame(kind byte, id uint32, payload []byte) error {
	return h.raw(header(kind, id, uint32(len(payload))), payload)
}

// raw writes bytes as they are, under the frame lock.
func (h *helper) raw(parts ...[]byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range parts {
		if _, err := h.out.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func header(kind byte, id, n uint32) []byte {
	hdr := make([]byte, 9)
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:5], id)
	binary.BigEndian.PutUint32(hdr[5:9], n)
	return hdr
}

// hello sends a hello of version. It announces every capability but
// terminals (a helper that has them says so: tty.go), except in the modes
// of an old helper (stream-old, proc-unknown), which announce none: the
// version 2 baseline.
func (h *helper) hello(version int) error {
	hello := proto.Hello{Version: version, Session: os.Getpid(), UID: os.Getuid(), GID: os.Getgid(), Arch: runtime.GOARCH}
	if h.mode != "stream-old" && h.mode != "proc-unknown" {
		for _, c := range proto.Capabilities() {
			if c != proto.CapTTY {
				hello.Caps = append(hello.Caps, c)
			}
		}
	}
	b, _ := json.Marshal(hello)
	return h.frame(byte(proto.KindHello), 0, b)
}

func (h *helper) run(in io.Reader) error {
	switch h.mode {
	case "silent":
		return silence(in) // never a word, input never read
	case "bad-version":
		if err := h.hello(99); err != nil {
			return err
		}
		return drain(in)
	case "garbage":
		if err := h.raw([]byte("GARBAGE before the hello\n")); err != nil {
			return err
		}
		if err := h.hello(proto.Version); err != nil {
			return err
		}
		return drain(in)
	case "truncated-hello":
		if err := h.raw(header(byte(proto.KindHello), 0, 100), []byte(`{"ver`)); err != nil {
			return err
		}
		return silence(in)
	}
	if strings.HasPrefix(h.mode, "tty-") {
		return h.tty(in) // tty.go
	}
	if strings.HasPrefix(h.mode, "proc-") {
		return h.proc(in) // proc.go
	}
	if err := h.hello(proto.Version); err != nil {
		return err
	}
	switch h.mode {
	case "stopped":
		if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
			return err
		}
		return drain(in)
	case "hello-only":
		return drain(in)
	}
	return h.serve(in)
}

// serve reads requests and answers each as the mode says.
func (h *helper) serve(in io.Reader) error {
	for {
		kind, id, payload, err := readFrame(in)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if kind == byte(proto.KindCancel) {
			if err := h.egressCancel(id); err != nil { // egress.go
				return err
			}
			continue
		}
		if kind != byte(proto.KindRequest) {
			continue // input, stream frames, other cancels: ignored
		}
		var req proto.Request
		if err := json.Unmarshal(payload, &req); err != nil {
			return fmt.Errorf("request: %w", err)
		}
		if err := h.answerAlive(id, req); err != nil {
			return err
		}
	}
}

// answerAlive answers, saying it is alive every second meanwhile as an
// honest helper does (building a flood takes time on a loaded machine),
// except in the modes whose point is silence.
func (h *helper) answerAlive(id uint32, req proto.Request) error {
	switch h.mode {
	case "slow", "lie-id", "truncated", "bad-length", "unknown-kind":
		return h.answer(id, req)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = h.frame(byte(proto.KindAlive), 0, nil)
			}
		}
	}()
	return h.answer(id, req)
}

func (h *helper) answer(id uint32, req proto.Request) error {
	if handled, err := h.streamAnswer(id, req); handled { // stream.go
		return err
	}
	if handled, err := h.egressAnswer(id, req); handled { // egress.go
		return err
	}
	result := func(b []byte) error { return h.frame(byte(proto.KindResult), id, b) }
	switch h.mode {
	case "slow":
		go func() {
			time.Sleep(time.Duration(h.intArg(0, 12)) * time.Second)
			_ = result(honest(req))
		}()
		return nil
	case "flood-entries", "flood-matches", "flood-stats":
		field := h.mode[len("flood-"):]
		head, tail := `{"`+field+`":[{}`, `]}`
		return h.stream(byte(proto.KindResult), id, head, ",{}", tail)
	case "flood-read":
		return h.stream(byte(proto.KindResult), id, `{"read":{"Content":"`, "a", `","Encoding":"utf-8"}}`)
	case "flood-error":
		return h.stream(byte(proto.KindResult), id, `{"error":{"code":"internal_error","message":"`, "a", `"}}`)
	case "flood-stdout":
		for range 4 {
			if err := h.stream(byte(proto.KindStdout), id, "", "y", ""); err != nil {
				return err
			}
		}
		return result(honest(req))
	case "flood-fit":
		return result(fit(req))
	case "lie-cat":
		if req.Op != proto.OpCat {
			return result(honest(req))
		}
		return h.lieCat(id, req)
	case "lie-capture":
		if req.Op != proto.OpExec || req.Capture == nil {
			return result(honest(req))
		}
		b, _ := json.Marshal(proto.Result{Captured: &proto.Captured{
			Size: req.Capture.Max + 1, Total: req.Capture.Max + 1, Lines: 1,
			Tail: bytes.Repeat([]byte("t"), 64<<10),
		}})
		return result(b)
	case "lie-id":
		return h.frame(byte(proto.KindResult), id+1000, honest(req))
	case "dup-result":
		if err := result(honest(req)); err != nil {
			return err
		}
		return result(honest(req))
	case "unknown-kind":
		return h.frame('Z', id, []byte("{}"))
	case "truncated":
		return h.raw(header(byte(proto.KindResult), id, 1000), []byte(`{"exit_cod`))
	case "bad-length":
		return h.raw(header(byte(proto.KindResult), id, 0xFFFFFFFF), []byte(`{}`))
	case "endless":
		go func() {
			out := bytes.Repeat([]byte("endless\n"), chunk/8)
			for h.frame(byte(proto.KindStdout), id, out) == nil {
			}
		}()
		return nil
	}
	return fmt.Errorf("unknown mode %q", h.mode)
}

// lieCat sends far more than the request's Limit.
func (h *helper) lieCat(id uint32, req proto.Request) error {
	total := int64(h.intArg(0, 100)) << 20
	size := h.intArg(1, chunk)
	if size >= flood {
		for sent := int64(0); sent < total; sent += flood {
			if err := h.stream(byte(proto.KindStdout), id, "", "c", ""); err != nil {
				return err
			}
		}
		return h.frame(byte(proto.KindResult), id, honest(req))
	}
	out := bytes.Repeat([]byte("c"), size)
	for sent := int64(0); sent < total; sent += int64(size) {
		if err := h.frame(byte(proto.KindStdout), id, out); err != nil {
			return err
		}
	}
	return h.frame(byte(proto.KindResult), id, honest(req))
}

func (h *helper) intArg(i, def int) int {
	if i < len(h.args) {
		if n, err := strconv.Atoi(h.args[i]); err == nil {
			return n
		}
	}
	return def
}

// honest is a plausible successful Result for req; stat says every file
// has 10 bytes.
func honest(req proto.Request) []byte {
	var res proto.Result
	switch req.Op {
	case proto.OpRead:
		res.Read = &fsops.ReadResult{Content: "hostile", Encoding: "utf-8", TotalLines: 1, StartLine: 1, EndLine: 1, NextOffset: -1}
	case proto.OpStat, proto.OpPrepare:
		for _, p := range req.Paths {
			res.Stats = append(res.Stats, proto.Stat{Resolved: p, Size: 10})
		}
	case proto.OpEdit:
		res.Count = 1
	}
	b, _ := json.Marshal(res)
	return b
}

// stream writes a 64 MiB frame: head, unit repeated, tail; in chunks, so
// that the attack costs the helper little time and memory.
func (h *helper) stream(kind byte, id uint32, head, unit, tail string) error {
	n := (flood - len(head) - len(tail)) / len(unit)
	size := len(head) + n*len(unit) + len(tail)
	chunk := []byte(strings.Repeat(unit, (64<<10)/len(unit)))
	per := len(chunk) / len(unit)
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.out.Write(append(header(kind, id, uint32(size)), head...)); err != nil {
		return err
	}
	for n > 0 {
		k := min(n, per)
		if _, err := h.out.Write(chunk[:k*len(unit)]); err != nil {
			return err
		}
		n -= k
	}
	_, err := h.out.Write([]byte(tail))
	return err
}

// fit is the largest list the library may accept for req's op: fitItems
// items, with names long enough to fill fitBytes. (Sized on lists of one
// and two items: building the list takes long enough once.)
func fit(req proto.Request) []byte {
	one, two := fitList(req, "/", 1), fitList(req, "/", 2) // "": omitted
	if one == nil {
		return honest(req)
	}
	per := len(two) - len(one) // an item named "/" and its comma
	extra := max(0, (fitBytes-(len(one)-per))/fitItems-per)
	return fitList(req, "/"+string(bytes.Repeat([]byte("f"), extra)), fitItems)
}

// fitList is a Result of n items named name in the field of req's op, or
// nil for an op without a list.
func fitList(req proto.Request, name string, n int) []byte {
	var res proto.Result
	switch req.Op {
	case proto.OpLs, proto.OpGlob:
		res.Entries = make([]fsops.FileInfo, n)
		for i := range res.Entries {
			res.Entries[i].Path = name
		}
	case proto.OpGrep:
		res.Matches = make([]fsops.GrepMatch, n)
		for i := range res.Matches {
			res.Matches[i] = fsops.GrepMatch{Path: name, Line: 1}
		}
	case proto.OpStat, proto.OpPrepare:
		res.Stats = make([]proto.Stat, n)
		for i := range res.Stats {
			res.Stats[i].Resolved = name
		}
	default:
		return nil
	}
	b, _ := json.Marshal(res)
	return b
}

// readFrame reads one frame of the library's.
func readFrame(r io.Reader) (kind byte, id uint32, payload []byte, err error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[5:9])
	if n > flood {
		return 0, 0, nil, fmt.Errorf("a frame of %d bytes", n)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, 0, nil, err
	}
	return hdr[0], binary.BigEndian.Uint32(hdr[1:5]), payload, nil
}

// drain reads and ignores the input until it ends.
func drain(in io.Reader) error {
	_, err := io.Copy(io.Discard, in)
	return err
}

// silence reads nothing and never leaves. (Not select{}: the runtime would
// call that a deadlock and exit.)
func silence(io.Reader) error {
	for {
		time.Sleep(time.Hour)
	}
}
