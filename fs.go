package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"path"
)

// FS is the sandbox's file system as an io/fs file system, as the
// sandbox's user sees it. It implements fs.FS, fs.StatFS, fs.ReadDirFS,
// fs.ReadFileFS and fs.SubFS, so fs.WalkDir, fs.Glob, fs.ReadFile,
// template.ParseFS, http.FS and testing/fstest work on a sandbox.
//
// Names are fs.ValidPath names relative to the container's root "/":
// "etc/passwd", "workspace/main.go", "." for the root itself. Use Sub (or
// fs.Sub) for another root, e.g. the working directory:
//
//	work, err := fs.Sub(sb.FS(ctx), strings.TrimPrefix(sb.WorkingDir(), "/"))
//
// As with os.DirFS, symbolic links are followed by Open, Stat and ReadFile
// (and may lead out of a Sub's directory); ReadDir reports them as links.
//
// Every operation is one request or more to the in-container helper on
// the sandbox's shared channel, within the context given to
// DockerSandbox.FS. Open streams: a file's bytes are fetched in ranges as
// they are read (at most 4 MiB held per open file), never the whole file
// at once. ReadFile holds the whole file, so it fails with ErrTooLarge past
// the sandbox's max download bytes (see WithMaxDownloadBytes). Errors are
// *fs.PathError values carrying the name asked for, so errors.Is(err,
// fs.ErrNotExist) and the like work. An FS is safe for concurrent use.
type FS struct {
	s    *DockerSandbox
	ctx  context.Context
	root string // absolute, clean
}

// FS returns the sandbox's file system, rooted at "/", whose operations
// run within ctx (a nil ctx is context.Background()).
func (s *DockerSandbox) FS(ctx context.Context) *FS {
	if ctx == nil {
		ctx = context.Background()
	}
	return &FS{s: s, ctx: ctx, root: "/"}
}

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.SubFS      = (*FS)(nil)
)

// abs returns the absolute path of name, which must be an fs.ValidPath
// name (else fs.ErrInvalid).
func (f *FS) abs(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return path.Join(f.root, name), nil
}

// rename makes err, a failure on the absolute path p, speak of name.
func rename(err error, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

// Open opens the named file for reading. A directory opens as an
// fs.ReadDirFile. A regular file's bytes are read through the helper as
// the caller reads them; the returned file also implements io.Seeker and
// io.ReaderAt. Reading a device, FIFO or socket fails with ErrNotRegular.
func (f *FS) Open(name string) (fs.File, error) {
	p, err := f.abs("open", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.s.info(f.ctx, "open", p)
	if err != nil {
		return nil, rename(err, name)
	}
	return &file{fsys: f, name: name, path: p, info: named{fileStat{fi}, path.Base(name)}}, nil
}

// Stat describes the named file, following symbolic links.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.abs("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.s.info(f.ctx, "stat", p)
	if err != nil {
		return nil, rename(err, name)
	}
	return named{fileStat{fi}, path.Base(name)}, nil
}

// ReadDir lists the named directory, sorted by name, in one request. As
// in os.ReadDir, entries describe the directory's members themselves: a
// symbolic link is of type fs.ModeSymlink, and its Info describes the link.
// A directory whose listing exceeds what one answer of the helper holds
// (16 MiB, some 100,000 entries) fails with an error saying so.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.abs("readdir", name)
	if err != nil {
		return nil, err
	}
	return f.readDir(name, p)
}

func (f *FS) readDir(name, p string) ([]fs.DirEntry, error) {
	infos, err := f.s.Ls(f.ctx, p)
	if err != nil {
		return nil, rename(err, name)
	}
	out := make([]fs.DirEntry, len(infos)) // sorted by name: Ls sorts siblings by path
	for i, fi := range infos {
		out[i] = fi.DirEntry()
	}
	return out, nil
}

// ReadFile returns the named file's content, following symbolic links. A
// directory is ErrIsDir; a file over the sandbox's max download bytes is
// ErrTooLarge.
func (f *FS) ReadFile(name string) ([]byte, error) {
	p, err := f.abs("read", name)
	if err != nil {
		return nil, err
	}
	b, err := f.s.readAll(f.ctx, p)
	if err != nil {
		return nil, rename(err, name)
	}
	return b, nil
}

// Sub returns the file system rooted at dir (a directory of f; it is
// not looked at until used).
func (f *FS) Sub(dir string) (fs.FS, error) {
	p, err := f.abs("sub", dir)
	if err != nil {
		return nil, err
	}
	return &FS{s: f.s, ctx: f.ctx, root: p}, nil
}
