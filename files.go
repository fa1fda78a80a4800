package sandbox

import (
	"bytes"
	"context"
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
func (s *DockerSandbox) abs(op, p string) (string, error) {
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
func (s *DockerSandbox) fileCall(ctx context.Context, op, p string, req proto.Request, in io.Reader) (*proto.Result, error) {
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
func (s *DockerSandbox) Write(ctx context.Context, path string, content []byte) error {
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
func (s *DockerSandbox) Edit(ctx context.Context, path, oldString, newString string, replaceAll bool) (int, error) {
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
func (s *DockerSandbox) Delete(ctx context.Context, path string) error {
	p, err := s.abs("delete", path)
	if err != nil {
		return err
	}
	_, err = s.fileCall(ctx, "delete", p, proto.Request{Op: proto.OpDelete, Path: p}, nil)
	return err
}

// Ls lists the directory at path, one level deep, sorted by name.
func (s *DockerSandbox) Ls(ctx context.Context, path string) ([]FileInfo, error) {
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
