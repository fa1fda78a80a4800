package main

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The process modes: a valid hello, then every request is answered as a
// helper that lies about processes would. proc_start always succeeds with
// process ID procID.
//
//	proc-flood-read  a read answers 64 MiB of Stdout frames (far more than
//	                 its Max), then a Result that claims them
//	proc-bad-cursor  a read answers bytes from before the cursor asked for
//	proc-big-list    a list answers 1,025 processes (a table holds 1,024)
//	proc-never-done  a read answers nothing and not done, a wait "still
//	                 running", at once, for ever
//	proc-other-id    every answer after the start is about another process
//	                 (ID "other\x01", not even a valid one)
//	proc-unknown     an old helper: its hello announces no capabilities (the
//	                 library then sends no process request), and every
//	                 process request is an unknown operation
func (h *helper) proc(in io.Reader) error {
	if err := h.hello(proto.Version); err != nil {
		return err
	}
	for {
		kind, id, payload, err := readFrame(in)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if kind != byte(proto.KindRequest) {
			continue
		}
		var req proto.Request
		if err := json.Unmarshal(payload, &req); err != nil {
			return err
		}
		if err := h.procAnswer(id, req); err != nil {
			return err
		}
	}
}

const procID = "hostile0000000001"

func (h *helper) procAnswer(id uint32, req proto.Request) error {
	info := proto.ProcInfo{ID: procID, Command: "lies", Pid: 42, Running: true, Started: time.Now(), LogSize: proto.DefaultLogSize}
	res := proto.Result{Proc: &proto.ProcResult{Info: info}}
	switch {
	case h.mode == "proc-unknown":
		res = proto.Result{Error: &proto.Error{Code: proto.CodeBadRequest, Message: "unknown operation " + req.Op}}
	case h.mode == "proc-other-id" && req.Op != proto.OpProcStart:
		res.Proc.Info.ID = "other\x01"
	case req.Op == proto.OpProcList && h.mode == "proc-big-list":
		res.Proc = nil
		for range proto.MaxProcs + 1 { // one more than a table holds
			res.Procs = append(res.Procs, info)
		}
	case req.Op == proto.OpProcRead && h.mode == "proc-flood-read":
		out := bytes.Repeat([]byte("f"), chunk)
		for range (64 << 20) / chunk {
			if err := h.frame(byte(proto.KindStdout), id, out); err != nil {
				return err
			}
		}
		res.Proc.Start, res.Proc.Next = req.Proc.Cursor, req.Proc.Cursor+64<<20
	case req.Op == proto.OpProcRead && h.mode == "proc-bad-cursor":
		if err := h.frame(byte(proto.KindStdout), id, []byte("old")); err != nil {
			return err
		}
		res.Proc.Start, res.Proc.Next = req.Proc.Cursor-3, req.Proc.Cursor
	case req.Op == proto.OpProcRead: // proc-never-done
		res.Proc.Start, res.Proc.Next = req.Proc.Cursor, req.Proc.Cursor
	}
	b, _ := json.Marshal(res)
	return h.frame(byte(proto.KindResult), id, b)
}
