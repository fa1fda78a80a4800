package helper

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// decodeRequest decodes the payload of a request frame and checks it before
// anything runs: a known operation, the fields that operation needs,
// non-negative numbers, absolute paths without NUL bytes. A malformed
// request is CodeBadRequest; a missing or unusable path is CodeInvalidPath
// (so that the library reports ErrInvalidPath, as the file operations would).
func decodeRequest(payload []byte) (proto.Request, *proto.Error) {
	var req proto.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return proto.Request{}, badRequest("%v", err)
	}
	if err := validateRequest(&req); err != nil {
		return proto.Request{}, err
	}
	return req, nil
}

func validateRequest(req *proto.Request) *proto.Error {
	switch {
	case req.Timeout < 0:
		return badRequest("negative timeout %d", req.Timeout)
	case req.Offset < 0:
		return badRequest("negative offset %d", req.Offset)
	case req.Limit < 0:
		return badRequest("negative limit %d", req.Limit)
	case req.MaxCount < 0:
		return badRequest("negative max count %d", req.MaxCount)
	}
	o, ok := ops[req.Op]
	if !ok {
		return badRequest("unknown operation %q", clip(req.Op))
	}
	return o.validate(req)
}

// validateExec: a command, and a usable directory if any.
func validateExec(req *proto.Request) *proto.Error {
	if req.Command == "" {
		return badRequest("exec without a command")
	}
	if req.Dir != "" {
		return checkPath("dir", req.Dir)
	}
	return nil
}

// validateKill: a session that is not PID 1's.
func validateKill(req *proto.Request) *proto.Error {
	if req.Session <= 1 {
		return badRequest("kill needs a session above 1")
	}
	return nil
}

// validatePath: a usable Path.
func validatePath(req *proto.Request) *proto.Error { return checkPath("path", req.Path) }

// validateRename: a usable Path and New.
func validateRename(req *proto.Request) *proto.Error {
	if err := checkPath("path", req.Path); err != nil {
		return err
	}
	return checkPath("new", req.New)
}

// validatePaths: a batch of usable Paths.
func validatePaths(req *proto.Request) *proto.Error {
	if len(req.Paths) == 0 {
		return badRequest("%s without paths", req.Op)
	}
	for _, p := range req.Paths {
		if err := checkPath("paths", p); err != nil {
			return err
		}
	}
	return nil
}

// checkPath requires p, the value of the request field named field, to be
// an absolute path without NUL bytes.
func checkPath(field, p string) *proto.Error {
	switch {
	case p == "":
		return &proto.Error{Code: proto.CodeInvalidPath, Message: fmt.Sprintf("missing %s", field)}
	case !path.IsAbs(p):
		return &proto.Error{Code: proto.CodeInvalidPath, Message: fmt.Sprintf("%s %q is not absolute", field, clip(p))}
	case strings.IndexByte(p, 0) >= 0:
		return &proto.Error{Code: proto.CodeInvalidPath, Message: fmt.Sprintf("%s %q contains a NUL byte", field, clip(p))}
	}
	return nil
}

func badRequest(format string, args ...any) *proto.Error {
	return &proto.Error{Code: proto.CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

// clip shortens s for an error message: the request may be large.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
