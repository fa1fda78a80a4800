package helper

import (
	"context"
	"io"
	"os"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// op is how the serving helper checks and runs one operation: the helper's
// half of the table of operations, whose other half, what the protocol says
// about each (input, output, retries, result bounds, capability), is
// proto.Ops. Adding an operation means a row in each.
type op struct {
	// validate checks the fields the operation needs, before anything
	// runs (the checks common to all come first, in validateRequest).
	validate func(*proto.Request) *proto.Error
	// handle runs the request; in carries its Input frames (when
	// proto.Request.TakesInput), send its output and stream frames, s and
	// id are the server and the request's ID (for streams; nil and 0 when
	// a test calls handle).
	handle func(ctx context.Context, s *server, id uint32, req proto.Request, in io.Reader, send sender) *proto.Result
	// table runs a process operation in PID 1, once the serving helper
	// forwarded it there (pid1_table.go); nil for the other operations and
	// for a start, which procTable.handle runs itself (its launch follows
	// its answer).
	table func(t *procTable, ctx context.Context, req proto.Request, in []byte, send sender) *proto.Result
}

// sender sends one frame of a request.
type sender = func(proto.Kind, []byte) error

// ops is the dispatch table.
var ops = map[string]op{
	proto.OpExec: {validate: validateExec, handle: func(ctx context.Context, _ *server, _ uint32, req proto.Request, in io.Reader, send sender) *proto.Result {
		return runExec(ctx, req, in, send) // exec.go
	}},
	proto.OpRead:    {validate: validatePath, handle: fileOp(readOp)},
	proto.OpWrite:   {validate: validatePath, handle: fileOp(writeOp)},
	proto.OpEdit:    {validate: validatePath, handle: fileOp(editOp)},
	proto.OpLs:      {validate: validatePath, handle: fileOp(lsOp)},
	proto.OpGlob:    {validate: validatePath, handle: fileOp(globOp)},
	proto.OpGrep:    {validate: validatePath, handle: fileOp(grepOp)},
	proto.OpDelete:  {validate: validatePath, handle: fileOp(deleteOp)},
	proto.OpStat:    {validate: validatePaths, handle: fileOp(statOp)},
	proto.OpPrepare: {validate: validatePaths, handle: fileOp(prepareOp)},
	proto.OpRename:  {validate: validateRename, handle: fileOp(renameOp)},
	proto.OpCat: {validate: validatePath, handle: func(ctx context.Context, _ *server, _ uint32, req proto.Request, _ io.Reader, send sender) *proto.Result {
		return catFile(ctx, req, send) // files.go
	}},
	proto.OpInfo: {validate: validatePath, handle: fileOp(infoOp)},
	proto.OpKill: {validate: validateKill, handle: func(_ context.Context, _ *server, _ uint32, req proto.Request, _ io.Reader, _ sender) *proto.Result {
		return killRequest(req) // kill.go
	}},

	proto.OpDial: {validate: validateDial, handle: func(ctx context.Context, s *server, id uint32, req proto.Request, _ io.Reader, send sender) *proto.Result {
		return s.streams.dial(ctx, id, req, send) // dial.go
	}},
	proto.OpAccept: {validate: validateAccept, handle: func(ctx context.Context, s *server, id uint32, req proto.Request, _ io.Reader, send sender) *proto.Result {
		return s.streams.accept(ctx, &s.accepts, id, req, send) // accept.go
	}},
	proto.OpWatch: {validate: validatePath, handle: func(ctx context.Context, s *server, id uint32, req proto.Request, _ io.Reader, send sender) *proto.Result {
		return s.streams.watch(ctx, id, req, send) // watch.go
	}},

	// Process operations go to PID 1's table (serve_procs.go), which runs
	// them (pid1_table.go).
	proto.OpProcStart: procOp(nil),
	proto.OpProcList: procOp(func(t *procTable, _ context.Context, _ proto.Request, _ []byte, _ sender) *proto.Result {
		return t.list()
	}),
	proto.OpProcInfo: procOp(onProc(func(t *procTable, _ context.Context, p *proc, _ proto.Request, _ []byte, _ sender) *proto.Result {
		return t.infoOf(p)
	})),
	proto.OpProcRead: procOp(onProc(func(t *procTable, ctx context.Context, p *proc, req proto.Request, _ []byte, send sender) *proto.Result {
		return t.read(ctx, p, req.Proc, send)
	})),
	proto.OpProcWrite: procOp(onProc(func(t *procTable, ctx context.Context, p *proc, _ proto.Request, in []byte, _ sender) *proto.Result {
		return t.write(ctx, p, in)
	})),
	proto.OpProcCloseStdin: procOp(onProc(func(t *procTable, _ context.Context, p *proc, _ proto.Request, _ []byte, _ sender) *proto.Result {
		return t.closeStdin(p)
	})),
	proto.OpProcSignal: procOp(onProc(control)),
	proto.OpProcKill:   procOp(onProc(control)),
	proto.OpProcWait: procOp(onProc(func(t *procTable, ctx context.Context, p *proc, req proto.Request, _ []byte, _ sender) *proto.Result {
		return t.wait(ctx, p, req.Proc.WaitMs)
	})),
	proto.OpProcResize: procOp(onProc(control)),
}

// procOp is the row of a process operation that PID 1 runs with table: the
// serving helper checks it and forwards it.
func procOp(table func(t *procTable, ctx context.Context, req proto.Request, in []byte, send sender) *proto.Result) op {
	return op{validate: validateProc, handle: func(ctx context.Context, _ *server, _ uint32, req proto.Request, in io.Reader, send sender) *proto.Result {
		return forwardProc(ctx, req, in, send)
	}, table: table}
}

// onProc makes f, which runs on the process of the request, a table
// handler: the process is looked up first.
func onProc(f func(t *procTable, ctx context.Context, p *proc, req proto.Request, in []byte, send sender) *proto.Result) func(*procTable, context.Context, proto.Request, []byte, sender) *proto.Result {
	return func(t *procTable, ctx context.Context, req proto.Request, in []byte, send sender) *proto.Result {
		p, bad := t.lookup(req)
		if bad != nil {
			return bad
		}
		return f(t, ctx, p, req, in, send)
	}
}

// control signals, kills or resizes p (procTable.control).
func control(t *procTable, _ context.Context, p *proc, req proto.Request, _ []byte, _ sender) *proto.Result {
	return t.control(p, req)
}

// handleRequest runs one valid request (ops).
func (s *server) handleRequest(ctx context.Context, id uint32, req proto.Request, in io.Reader, send sender) *proto.Result {
	o, ok := ops[req.Op]
	if !ok {
		return &proto.Result{Error: badRequest("unknown operation %q", clip(req.Op))}
	}
	return o.handle(ctx, s, id, req, in, send)
}

// handle runs one request that is not a stream, without a server.
func handle(ctx context.Context, req proto.Request, in io.Reader, send sender) *proto.Result {
	return (*server)(nil).handleRequest(ctx, 0, req, in, send)
}

// fileOp makes a file operation a handler: f fills res or fails.
func fileOp(f func(ctx context.Context, req proto.Request, in io.Reader, res *proto.Result) error) func(context.Context, *server, uint32, proto.Request, io.Reader, sender) *proto.Result {
	return func(ctx context.Context, _ *server, _ uint32, req proto.Request, in io.Reader, _ sender) *proto.Result {
		var res proto.Result
		if err := f(ctx, req, in, &res); err != nil {
			return &proto.Result{Error: proto.ErrorOf(err)}
		}
		return &res
	}
}

// The file operations (files.go, package fsops).

func readOp(_ context.Context, req proto.Request, _ io.Reader, res *proto.Result) error {
	r, err := fsops.Read(root, req.Path, req.Offset, req.Limit)
	res.Read = &r
	return err
}

func lsOp(_ context.Context, req proto.Request, _ io.Reader, res *proto.Result) (err error) {
	res.Entries, err = fsops.Ls(root, req.Path)
	return err
}

func globOp(ctx context.Context, req proto.Request, _ io.Reader, res *proto.Result) error {
	r, err := fsops.Glob(ctx, root, req.Path, req.Pattern, fsops.GlobOptions{})
	res.Entries, res.Truncated = r.Matches, r.Truncated
	return err
}

func grepOp(ctx context.Context, req proto.Request, _ io.Reader, res *proto.Result) error {
	r, err := fsops.Grep(ctx, root, req.Path, req.Pattern, fsops.GrepOptions{Glob: req.Glob, MaxCount: req.MaxCount})
	res.Matches, res.Truncated = r.Matches, r.Truncated
	return err
}

func writeOp(_ context.Context, req proto.Request, in io.Reader, _ *proto.Result) error {
	return writeFile(req.Path, in)
}

func editOp(_ context.Context, req proto.Request, _ io.Reader, res *proto.Result) (err error) {
	res.Count, err = editFile(req.Path, req.Old, req.New, req.ReplaceAll)
	return err
}

func deleteOp(_ context.Context, req proto.Request, _ io.Reader, _ *proto.Result) error {
	return deletePath(req.Path)
}

func statOp(_ context.Context, req proto.Request, _ io.Reader, res *proto.Result) error {
	res.Stats = statAll(req.Paths)
	return nil
}

func infoOp(_ context.Context, req proto.Request, _ io.Reader, res *proto.Result) error {
	fi, err := infoOf(req.Path)
	res.Entries = proto.List[fsops.FileInfo]{fi}
	return err
}

func renameOp(_ context.Context, req proto.Request, _ io.Reader, _ *proto.Result) error {
	return renameUpload(req.Path, req.New)
}

func prepareOp(_ context.Context, req proto.Request, _ io.Reader, res *proto.Result) error {
	res.Stats = prepareAll(req.Paths)
	res.UID, res.GID = os.Getuid(), os.Getgid()
	return nil
}
