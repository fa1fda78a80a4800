package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Stat describes the file at path (absolute, or relative to the working
// directory), following symbolic links as os.Stat does. Its Sys method
// returns the FileInfo (with the absolute path). A missing path is an
// *fs.PathError matching fs.ErrNotExist.
func (s *DockerSandbox) Stat(ctx context.Context, path string) (fs.FileInfo, error) {
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
func (s *DockerSandbox) info(ctx context.Context, op, p string) (FileInfo, error) {
	res, err := s.call(ctx, proto.Request{Op: proto.OpInfo, Path: p}, callOptions{shared: true})
	if err != nil {
		return FileInfo{}, err
	}
	if res.Error != nil {
		if res.Error.Code == proto.CodeBadRequest {
			return FileInfo{}, fmt.Errorf("%w: the sandbox's helper cannot stat (%s); it predates this library: make a new sandbox", ErrProtocolVersion, res.Error.Message)
		}
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
