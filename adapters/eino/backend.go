package sandboxeino

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/cloudwego/eino/adk/filesystem"
	"github.com/dockersandbox/sandbox"
)

// Backend is a Docker sandbox as Eino's filesystem and shell backend: it
// implements [filesystem.Backend], [filesystem.ShellBackend] and
// [filesystem.StreamingShellBackend], for Eino's filesystem middleware
// (github.com/cloudwego/eino/adk/middlewares/filesystem) and the agents
// that use it, such as the prebuilt deep agent. See the package
// documentation for where it differs from Eino's InMemoryBackend.
//
// A Backend is safe for concurrent use. It does not own the sandbox:
// close the sandbox when done.
type Backend struct {
	sb       *sandbox.Sandbox
	execOpts []sandbox.ExecOption
	capture  *captureConfig
}

var (
	_ filesystem.Backend               = (*Backend)(nil)
	_ filesystem.ShellBackend          = (*Backend)(nil)
	_ filesystem.StreamingShellBackend = (*Backend)(nil)
)

// A BackendOption adjusts NewBackend.
type BackendOption func(*Backend)

// WithExecOptions applies opts (a timeout, environment, directory or user)
// to every command that Execute, ExecuteStreaming and ExecuteBackground
// run.
func WithExecOptions(opts ...sandbox.ExecOption) BackendOption {
	return func(b *Backend) { b.execOpts = append(b.execOpts, opts...) }
}

// WithCaptureOutput makes Execute keep each command's whole output, as it
// streams, in a file of the sandbox, dir/<tool call ID> (Eino's
// compose.GetToolCallID; a call without one is not captured), up to max
// bytes (0: sandbox.DefaultCaptureBytes), as deepagents'
// enable_capture_offload does: an output of at most tokens×4 bytes (0:
// 20,000 tokens, the threshold of Eino's large tool result offloading) is
// returned as usual and the file removed; a larger one is returned as
// deepagents' message (tools.CapturedMessage) with the file's path, the
// exit status and its head and tail, small enough that Eino's offloading
// keeps it. The model then sees the end of a large output, where an
// error is, not only its head. ExecuteStreaming captures as Execute does
// and answers in one chunk at the end (Eino's filesystem middleware runs
// execute through it); ExecuteBackground does not capture.
func WithCaptureOutput(dir string, max int64, tokens int) BackendOption {
	if tokens <= 0 {
		tokens = 20000
	}
	return func(b *Backend) { b.capture = &captureConfig{dir: dir, max: max, budget: int64(tokens) * 4} }
}

type captureConfig struct {
	dir    string
	max    int64
	budget int64 // bytes
}

// NewBackend returns sb as an Eino filesystem and shell backend.
func NewBackend(sb *sandbox.Sandbox, opts ...BackendOption) *Backend {
	b := &Backend{sb: sb}
	for _, opt := range opts {
		opt(b)
	}
	return b
}

// DefaultReadLimit is how many lines Read returns when the request's Limit
// is not positive, as in Eino's InMemoryBackend and read_file tool.
const DefaultReadLimit = 200

// ErrEmptyOldString is the error of an Edit whose OldString is empty.
var ErrEmptyOldString = errors.New("old string must be non-empty")

var errNilRequest = errors.New("sandboxeino: nil request")

// abs resolves p as the sandbox does (relative to its working directory),
// and "" as def.
func (b *Backend) abs(p, def string) string {
	switch {
	case p == "":
		return def
	case path.IsAbs(p):
		return path.Clean(p)
	default:
		return path.Join(b.sb.WorkingDir(), p)
	}
}

// LsInfo lists the directory req.Path ("" is "/") one level deep, sorted,
// directories included, as absolute paths. A regular file lists as itself.
func (b *Backend) LsInfo(ctx context.Context, req *filesystem.LsInfoRequest) ([]filesystem.FileInfo, error) {
	if req == nil {
		return nil, errNilRequest
	}
	p := b.abs(req.Path, "/")
	entries, err := b.sb.Ls(ctx, p)
	if errors.Is(err, sandbox.ErrNotDir) {
		if exists, _ := b.fileExists(ctx, p); exists {
			return []filesystem.FileInfo{{Path: p}}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]filesystem.FileInfo, len(entries))
	for i, e := range entries {
		out[i] = filesystem.FileInfo{Path: e.Path}
	}
	return out, nil
}

// Read returns up to req.Limit lines (DefaultReadLimit when not positive)
// of the file from the 0-based line req.Offset (negative is 0), each as
// "%6d\t<line>" (cat -n), joined by "\n". An offset past the end reads as
// "". An empty file reads as a system reminder saying so, a binary or media
// file as a sentence saying what it is; a page is at most 512000 bytes.
func (b *Backend) Read(ctx context.Context, req *filesystem.ReadRequest) (string, error) {
	if req == nil {
		return "", errNilRequest
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	p := b.abs(req.FilePath, "")
	r, err := b.sb.Read(ctx, p, sandbox.ReadOffset(max(req.Offset, 0)), sandbox.ReadLimit(limit))
	switch {
	case errors.Is(err, sandbox.ErrOffsetOutOfRange):
		return "", nil
	case err != nil:
		return "", err
	case r.Encoding == "base64":
		return fmt.Sprintf("%s is a binary file (%d bytes); its content cannot be shown (read_file returns text only).", p, decodedLen(r.Content)), nil
	case r.StartLine == 0:
		return r.Content, nil // the empty-file reminder
	}
	content, note := r.Content, ""
	if r.Truncated {
		if i := strings.LastIndex(content, "\n\n[Output was truncated"); i >= 0 {
			content, note = content[:i], content[i:]
		}
	}
	var sb strings.Builder
	for i, line := range strings.Split(content, "\n") {
		if i > 0 {
			sb.WriteByte('\n')
		}
		fmt.Fprintf(&sb, "%6d\t%s", r.StartLine+i, line)
	}
	sb.WriteString(note)
	return sb.String(), nil
}

// GrepRaw finds the lines containing req.Pattern, a literal string, in the
// regular files under req.Path ("" is the sandbox's working directory, as
// GrepRequest documents), filtered by req.Glob, sorted by path and line.
// Binary files are skipped; an empty pattern is ErrInvalidPattern.
func (b *Backend) GrepRaw(ctx context.Context, req *filesystem.GrepRequest) ([]filesystem.GrepMatch, error) {
	if req == nil {
		return nil, errNilRequest
	}
	var opts []sandbox.GrepOption
	if req.Glob != "" {
		opts = append(opts, sandbox.GrepGlob(req.Glob))
	}
	res, err := b.sb.Grep(ctx, req.Pattern, b.abs(req.Path, b.sb.WorkingDir()), opts...)
	if err != nil {
		return nil, err
	}
	out := make([]filesystem.GrepMatch, len(res.Matches))
	for i, m := range res.Matches {
		out[i] = filesystem.GrepMatch{Path: m.Path, Line: m.Line, Content: m.Text}
	}
	return out, nil
}

// GlobInfo finds the regular files under req.Path ("" is "/") matching
// req.Pattern, sorted: a pattern without "/" matches base names at any
// depth; with "/", paths relative to req.Path, "**" spanning directories;
// an absolute pattern matches absolute paths.
func (b *Backend) GlobInfo(ctx context.Context, req *filesystem.GlobInfoRequest) ([]filesystem.FileInfo, error) {
	if req == nil {
		return nil, errNilRequest
	}
	root, pattern := b.abs(req.Path, "/"), req.Pattern
	under := "" // keep only matches below this directory
	if path.IsAbs(pattern) && root != "/" {
		if rest, ok := strings.CutPrefix(pattern, root+"/"); ok {
			pattern = "/" + rest // anchored at root
		} else {
			root, under = "/", root+"/"
		}
	}
	res, err := b.sb.Glob(ctx, pattern, root)
	if err != nil {
		return nil, err
	}
	out := make([]filesystem.FileInfo, 0, len(res.Matches))
	for _, m := range res.Matches {
		if strings.HasPrefix(m.Path, under) {
			out = append(out, filesystem.FileInfo{Path: m.Path})
		}
	}
	return out, nil
}

// Write creates the file req.FilePath with req.Content, and its parent
// directories; an existing file is an error matching fs.ErrExist, as
// WriteRequest documents. The check and the write are two calls: a file
// created between them by another writer is replaced.
func (b *Backend) Write(ctx context.Context, req *filesystem.WriteRequest) error {
	if req == nil {
		return errNilRequest
	}
	p := b.abs(req.FilePath, "")
	exists, err := b.fileExists(ctx, p)
	if err != nil {
		return err
	}
	if exists {
		return &fs.PathError{Op: "write", Path: p, Err: fs.ErrExist}
	}
	return b.sb.Write(ctx, p, []byte(req.Content))
}

// fileExists reports whether p exists and is not a directory. A missing p
// or a directory is false with no error (Write and Ls say what is wrong);
// an error that leaves it unknown (permission denied, say) is returned.
func (b *Backend) fileExists(ctx context.Context, p string) (bool, error) {
	_, err := b.sb.Read(ctx, p, sandbox.ReadLimit(0))
	switch {
	case err == nil, errors.Is(err, sandbox.ErrBinaryTooLarge):
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, sandbox.ErrIsDir):
		return false, nil
	case errors.Is(err, sandbox.ErrNotRegular):
		return true, nil
	}
	return false, err
}

// Edit replaces req.OldString (non-empty, else ErrEmptyOldString) with
// req.NewString in the file, literally: the only occurrence, or every one
// with req.ReplaceAll. None is sandbox.ErrStringNotFound, more than one
// without ReplaceAll sandbox.ErrMultipleOccurrences, a missing file
// fs.ErrNotExist. A file with CRLF line ends matches LF text.
func (b *Backend) Edit(ctx context.Context, req *filesystem.EditRequest) error {
	if req == nil {
		return errNilRequest
	}
	p := b.abs(req.FilePath, "")
	if req.OldString == "" {
		return &fs.PathError{Op: "edit", Path: p, Err: ErrEmptyOldString}
	}
	_, err := b.sb.Edit(ctx, p, req.OldString, req.NewString, req.ReplaceAll)
	return err
}

// decodedLen is the number of bytes a padded base64 string encodes.
func decodedLen(s string) int {
	n := len(s) / 4 * 3
	if strings.HasSuffix(s, "==") {
		n -= 2
	} else if strings.HasSuffix(s, "=") {
		n--
	}
	return max(n, 0)
}
