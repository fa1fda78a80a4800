package helper

import (
	"strings"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// validateProc checks a process request before it is forwarded to PID 1.
func validateProc(req *proto.Request) *proto.Error {
	pr := req.Proc
	if pr == nil {
		return badRequest("%s without its arguments", req.Op)
	}
	switch {
	case pr.Cursor < 0:
		return badRequest("negative cursor %d", pr.Cursor)
	case pr.Max < 0 || pr.Max > proto.MaxProcRead:
		return badRequest("read max %d out of range", pr.Max)
	case pr.WaitMs < 0:
		return badRequest("negative wait %d", pr.WaitMs)
	}
	switch req.Op {
	case proto.OpProcStart:
		switch {
		case req.Command == "":
			return badRequest("start without a command")
		case pr.LogSize != 0 && (pr.LogSize < 1024 || pr.LogSize > proto.MaxLogSize):
			return badRequest("log size %d out of range", pr.LogSize)
		case pr.TTY && !validWinsize(pr.Rows, pr.Cols):
			return badRequest("terminal size %dx%d out of range", pr.Rows, pr.Cols)
		case strings.IndexByte(req.Command, 0) >= 0:
			return badRequest("a command with a NUL byte")
		}
		for _, kv := range req.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
				return badRequest("env %q: want KEY=value", clip(kv))
			}
		}
		if req.Dir != "" {
			return checkPath("dir", req.Dir)
		}
		return nil
	case proto.OpProcList:
		return nil
	}
	if pr.ID == "" || len(pr.ID) > proto.MaxProcID {
		return &proto.Error{Code: proto.CodeProcNotFound, Message: "no process " + clip(pr.ID)}
	}
	switch req.Op {
	case proto.OpProcSignal:
		if pr.Signal <= 0 || pr.Signal > 64 {
			return badRequest("invalid signal %d", pr.Signal)
		}
	case proto.OpProcResize:
		if !validWinsize(pr.Rows, pr.Cols) {
			return badRequest("terminal size %dx%d out of range", pr.Rows, pr.Cols)
		}
	}
	return nil
}

func validWinsize(rows, cols int) bool {
	return rows > 0 && cols > 0 && rows <= 0xffff && cols <= 0xffff
}
