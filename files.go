package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// FileInfo describes a file in the sandbox.
type FileInfo struct {
	Path    string // absolute
	IsDir   bool   // false for a symlink, even to a directory
	Size    int64
	ModTime time.Time
	Mode    fs.FileMode
}

// abs resolves p against the working directory and cleans it. An empty
// path or one with a NUL byte is ErrInvalidPath.
func (s *Sandbox) abs(op, p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", &fs.PathError{Op: op, Path: p, Err: ErrInvalidPath}
	}
	if !path.IsAbs(p) {
		return path.Join(s.opts.workingDir, p), nil
	}
	return path.Clean(p), nil
}

// fileCall runs a file operation on the absolute path p and turns its
// failure into an *fs.PathError.
func (s *Sandbox) fileCall(ctx context.Context, op, p string, req proto.Request, in io.Reader) (*proto.Result, error) {
	res, err := s.call(ctx, req, callOptions{stdin: in, shared: true})
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, &fs.PathError{Op: op, Path: p, Err: res.Error.Err()}
	}
	return res, nil
}

// Write replaces the file at path with content (byte-exact), creating it
// and its parent directories as needed. The old content stays intact if
// the write fails. A directory at path is ErrIsDir.
func (s *Sandbox) Write(ctx context.Context, path string, content []byte) (err error) {
	ctx, op := s.begin(ctx, "Write")
	defer op.end(&err)
	op.path(path)
	op.bytes(int64(len(content)))
	p, err := s.abs("write", path)
	if err != nil {
		return err
	}
	_, err = s.fileCall(ctx, "write", p, proto.Request{Op: proto.OpWrite, Path: p}, bytes.NewReader(content))
	return err
}

// Edit replaces oldString with newString in the file at path, literally,
// and returns how many occurrences it found. Without replaceAll, more than
// one occurrence is ErrMultipleOccurrences; none is ErrStringNotFound. A
// file with CRLF line ends matches LF text (and keeps its CRLFs).
func (s *Sandbox) Edit(ctx context.Context, path, oldString, newString string, replaceAll bool) (_ int, err error) {
	ctx, op := s.begin(ctx, "Edit")
	defer op.end(&err)
	op.path(path)
	p, err := s.abs("edit", path)
	if err != nil {
		return 0, err
	}
	res, err := s.fileCall(ctx, "edit", p, proto.Request{Op: proto.OpEdit, Path: p, Old: oldString, New: newString, ReplaceAll: replaceAll}, nil)
	if err != nil {
		return 0, err
	}
	return res.Count, nil
}

// Delete removes the file or directory (recursively) at path. A missing
// path is fs.ErrNotExist; "/" is ErrInvalidPath.
func (s *Sandbox) Delete(ctx context.Context, path string) (err error) {
	ctx, op := s.begin(ctx, "Delete")
	defer op.end(&err)
	op.path(path)
	p, err := s.abs("delete", path)
	if err != nil {
		return err
	}
	_, err = s.fileCall(ctx, "delete", p, proto.Request{Op: proto.OpDelete, Path: p}, nil)
	return err
}

// Ls lists the directory at path, one level deep, sorted by name.
func (s *Sandbox) Ls(ctx context.Context, path string) (_ []FileInfo, err error) {
	ctx, op := s.begin(ctx, "Ls")
	defer op.end(&err)
	op.path(path)
	p, err := s.abs("ls", path)
	if err != nil {
		return nil, err
	}
	res, err := s.fileCall(ctx, "ls", p, proto.Request{Op: proto.OpLs, Path: p}, nil)
	if err != nil {
		return nil, err
	}
	return fileInfos(res.Entries), nil
}

func fileInfos(in []fsops.FileInfo) []FileInfo {
	out := make([]FileInfo, len(in))
	for i, e := range in {
		out[i] = FileInfo{Path: e.Path, IsDir: e.IsDir, Size: e.Size, ModTime: e.ModTime, Mode: e.Mode}
	}
	return out
}

// Stat describes the file at path (absolute, or relative to the working
// directory), following symbolic links as os.Stat does. Its Sys method
// returns the FileInfo (with the absolute path). A missing path is an
// *fs.PathError matching fs.ErrNotExist.
func (s *Sandbox) Stat(ctx context.Context, path string) (_ fs.FileInfo, err error) {
	ctx, op := s.begin(ctx, "Stat")
	defer op.end(&err)
	op.path(path)
	p, err := s.abs("stat", path)
	if err != nil {
		return nil, err
	}
	fi, err := s.info(ctx, "stat", p)
	if err != nil {
		return nil, err
	}
	return fi.Info(), nil
}

// info asks the helper about the absolute path p, symlinks followed.
func (s *Sandbox) info(ctx context.Context, op, p string) (FileInfo, error) {
	res, err := s.call(ctx, proto.Request{Op: proto.OpInfo, Path: p}, callOptions{shared: true})
	if err != nil {
		return FileInfo{}, err
	}
	if res.Error != nil {
		return FileInfo{}, &fs.PathError{Op: op, Path: p, Err: res.Error.Err()}
	}
	if len(res.Entries) != 1 {
		return FileInfo{}, fmt.Errorf("%w: stat answered %d entries, not 1", ErrHelper, len(res.Entries))
	}
	e := res.Entries[0]
	return FileInfo{Path: p, IsDir: e.Mode.IsDir(), Size: e.Size, ModTime: e.ModTime, Mode: e.Mode}, nil
}

// Info returns fi as an fs.FileInfo: its Name is the base of Path, its
// Sys the FileInfo itself.
func (fi FileInfo) Info() fs.FileInfo { return fileStat{fi} }

// DirEntry returns fi as an fs.DirEntry (as fs.ReadDir's entries are: a
// symbolic link is of type fs.ModeSymlink and not a directory).
func (fi FileInfo) DirEntry() fs.DirEntry { return fs.FileInfoToDirEntry(fileStat{fi}) }

// fileStat is a FileInfo as an fs.FileInfo.
type fileStat struct{ fi FileInfo }

func (f fileStat) Name() string       { return path.Base(f.fi.Path) }
func (f fileStat) Size() int64        { return f.fi.Size }
func (f fileStat) Mode() fs.FileMode  { return f.fi.Mode }
func (f fileStat) ModTime() time.Time { return f.fi.ModTime }
func (f fileStat) IsDir() bool        { return f.fi.Mode.IsDir() }
func (f fileStat) Sys() any           { return f.fi }
func (f fileStat) String() string     { return fs.FormatFileInfo(f) }

// named is st under another name (the name an fs.FS was asked for).
type named struct {
	fileStat
	name string
}

func (n named) Name() string   { return n.name }
func (n named) String() string { return fs.FormatFileInfo(n) }

// DefaultReadLimit is how many lines Read returns unless told otherwise.
const DefaultReadLimit = 2000

// ReadResult is one page of a file.
type ReadResult struct {
	// Content is the page's lines joined by "\n" (CRLF and CR line ends
	// become "\n"), or the whole file in base64 for images, audio, video,
	// PDFs and other binary files.
	Content string
	// Encoding is "utf-8" or "base64".
	Encoding string
	// TotalLines is the file's line count, or -1 when the page ended early
	// in a file over 1 MiB and the count was not taken.
	TotalLines int
	// StartLine and EndLine are the 1-based lines on the page (0 when none).
	StartLine, EndLine int
	// NextOffset is the offset to read the next page from, or -1 at the end.
	NextOffset int
	// NoLinesRequested reports a read with a limit of 0.
	NoLinesRequested bool
	// Truncated reports that the page hit the byte cap (512000 bytes) and
	// ends with a note saying so.
	Truncated bool
}

// A ReadOption adjusts Read.
type ReadOption func(*readConfig) error

type readConfig struct{ offset, limit int }

// ReadOffset starts the page at this 0-based line.
func ReadOffset(line int) ReadOption {
	return func(c *readConfig) error {
		if line < 0 {
			return fmt.Errorf("sandbox: read offset %d is negative", line)
		}
		c.offset = line
		return nil
	}
}

// ReadLimit returns at most this many lines (default DefaultReadLimit).
func ReadLimit(lines int) ReadOption {
	return func(c *readConfig) error {
		if lines < 0 {
			return fmt.Errorf("sandbox: read limit %d is negative", lines)
		}
		c.limit = lines
		return nil
	}
}

// Read returns a page of the file at path, with deepagents' rules: an
// empty file reads as a reminder text, binary and media files as base64
// (up to 512000 bytes), text as lines; an offset past the end is
// ErrOffsetOutOfRange. Memory stays bounded whatever the file's size or
// line length.
func (s *Sandbox) Read(ctx context.Context, path string, opts ...ReadOption) (_ ReadResult, err error) {
	ctx, op := s.begin(ctx, "Read")
	defer op.end(&err)
	op.path(path)
	cfg := readConfig{limit: DefaultReadLimit}
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return ReadResult{}, err
		}
	}
	p, err := s.abs("read", path)
	if err != nil {
		return ReadResult{}, err
	}
	res, err := s.fileCall(ctx, "read", p, proto.Request{Op: proto.OpRead, Path: p, Offset: cfg.offset, Limit: cfg.limit}, nil)
	if err != nil {
		return ReadResult{}, err
	}
	if res.Read == nil {
		return ReadResult{}, fmt.Errorf("%w: read answered without a page", ErrHelper)
	}
	r := res.Read
	op.bytes(int64(len(r.Content)))
	return ReadResult{
		Content: r.Content, Encoding: r.Encoding, TotalLines: r.TotalLines,
		StartLine: r.StartLine, EndLine: r.EndLine, NextOffset: r.NextOffset,
		NoLinesRequested: r.NoLinesRequested, Truncated: r.Truncated,
	}, nil
}

// GlobResult lists the files a glob matched.
type GlobResult struct {
	Matches   []FileInfo // regular files, absolute paths, sorted
	Truncated bool       // the search stopped early (time or count budget, unreadable dirs)
}

// Glob finds regular files under path whose path matches pattern, with
// deepagents 0.7's rules: a pattern without "/" matches the base name at
// any depth; with "/" it matches the path relative to path, "**" spanning
// directories; {a,b} braces expand; dot-files match only a pattern part
// that starts with "."; ".." is ErrInvalidPattern. Searching "/" skips
// /proc, /sys and /dev.
//
// Glob and Grep take the search path the same way: an argument, absolute
// or relative to the working directory, "" meaning the working directory.
// That is where every other relative path of the library resolves, and
// what the agent tools search by default (tools.New).
func (s *Sandbox) Glob(ctx context.Context, pattern, path string) (_ GlobResult, err error) {
	ctx, op := s.begin(ctx, "Glob")
	defer op.end(&err)
	op.path(path)
	p, err := s.abs("glob", searchPath(path))
	if err != nil {
		return GlobResult{}, err
	}
	res, err := s.fileCall(ctx, "glob", p, proto.Request{Op: proto.OpGlob, Path: p, Pattern: pattern}, nil)
	if err != nil {
		return GlobResult{}, err
	}
	return GlobResult{Matches: fileInfos(res.Entries), Truncated: res.Truncated}, nil
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string // absolute
	Line int    // 1-based
	Text string // the line without its line end (at most 64 KiB of it)
}

// GrepResult lists the lines Grep found.
type GrepResult struct {
	Matches   []GrepMatch // by path, then line
	Truncated bool        // more matches than the max count, or the 5 s time budget ran out
}

// A GrepOption adjusts Grep.
type GrepOption func(*grepConfig) error

type grepConfig struct {
	glob     string
	maxCount int
}

// searchPath is the search root of Glob and Grep: "" is the working
// directory.
func searchPath(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// GrepGlob searches only files matching pattern: without "/" it matches
// base names at any depth, with "/" paths relative to the search root.
// Unlike Glob, and like GNU grep's --include, wildcards match a leading
// ".": "*.go" selects ".hidden.go".
func GrepGlob(pattern string) GrepOption {
	return func(c *grepConfig) error {
		c.glob = pattern
		return nil
	}
}

// GrepMaxCount stops after n matches and sets Truncated if there were more.
func GrepMaxCount(n int) GrepOption {
	return func(c *grepConfig) error {
		if n <= 0 {
			return fmt.Errorf("sandbox: grep max count %d must be positive", n)
		}
		c.maxCount = n
		return nil
	}
}

// Grep finds lines containing pattern, a literal string (not a regular
// expression), in path (a file, or the regular files under a directory),
// hidden files included and binary files skipped. path is absolute or
// relative to the working directory; "" means the working directory, as
// for Glob.
func (s *Sandbox) Grep(ctx context.Context, pattern, path string, opts ...GrepOption) (_ GrepResult, err error) {
	ctx, op := s.begin(ctx, "Grep")
	defer op.end(&err)
	op.path(path)
	var cfg grepConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return GrepResult{}, err
		}
	}
	p, err := s.abs("grep", searchPath(path))
	if err != nil {
		return GrepResult{}, err
	}
	res, err := s.fileCall(ctx, "grep", p, proto.Request{Op: proto.OpGrep, Path: p, Pattern: pattern, Glob: cfg.glob, MaxCount: cfg.maxCount}, nil)
	if err != nil {
		return GrepResult{}, err
	}
	out := GrepResult{Matches: make([]GrepMatch, len(res.Matches)), Truncated: res.Truncated}
	for i, m := range res.Matches {
		out.Matches[i] = GrepMatch{Path: m.Path, Line: m.Line, Text: m.Text}
	}
	return out, nil
}
