package fsops

import (
	"errors"
	"io/fs"
	"os"
)

// DirFS is os.DirFS for names that are bytes: os.DirFS refuses every name
// that is not valid UTF-8 (fs.ValidPath), so a file named "x\xff" could be
// neither read nor listed nor searched. A name must still be unrooted,
// slash-separated, without empty, "." or ".." elements and without NUL.
// It implements fs.StatFS, fs.ReadDirFS and fs.ReadLinkFS. dir is a
// slash path of the host (the helper uses "/").
func DirFS(dir string) fs.FS { return dirFS(dir) }

type dirFS string

var (
	_ fs.StatFS     = dirFS("")
	_ fs.ReadDirFS  = dirFS("")
	_ fs.ReadLinkFS = dirFS("")
)

var errDirFSRoot = errors.New("fsops: DirFS with empty root")

// join returns the host path of name, or an error for an invalid name.
func (dir dirFS) join(op, name string) (string, error) {
	switch {
	case dir == "":
		return "", &fs.PathError{Op: op, Path: name, Err: errDirFSRoot}
	case !validName(name):
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	case name == ".":
		return string(dir), nil
	case dir[len(dir)-1] == '/':
		return string(dir) + name, nil
	}
	return string(dir) + "/" + name, nil
}

// relabel puts the fs name back into an *fs.PathError from the os package.
func relabel(err error, name string) error {
	if pe, ok := err.(*fs.PathError); ok {
		pe.Path = name
	}
	return err
}

// Open implements fs.FS.
func (dir dirFS) Open(name string) (fs.File, error) {
	full, err := dir.join("open", name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(full)
	if err != nil {
		return nil, relabel(err, name)
	}
	return f, nil
}

// Stat implements fs.StatFS.
func (dir dirFS) Stat(name string) (fs.FileInfo, error) {
	full, err := dir.join("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(full)
	return fi, relabel(err, name)
}

// Lstat implements fs.ReadLinkFS.
func (dir dirFS) Lstat(name string) (fs.FileInfo, error) {
	full, err := dir.join("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(full)
	return fi, relabel(err, name)
}

// ReadLink implements fs.ReadLinkFS.
func (dir dirFS) ReadLink(name string) (string, error) {
	full, err := dir.join("readlink", name)
	if err != nil {
		return "", err
	}
	target, err := os.Readlink(full)
	return target, relabel(err, name)
}

// ReadDir implements fs.ReadDirFS: the entries sorted by name.
func (dir dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	full, err := dir.join("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(full)
	return entries, relabel(err, name)
}

// validName is fs.ValidPath without its UTF-8 requirement, and without NUL
// (which no file name holds): names are bytes.
func validName(name string) bool {
	if name == "." {
		return true
	}
	for {
		i := 0
		for i < len(name) && name[i] != '/' {
			if name[i] == 0 {
				return false
			}
			i++
		}
		elem := name[:i]
		if elem == "" || elem == "." || elem == ".." {
			return false
		}
		if i == len(name) {
			return true
		}
		name = name[i+1:]
	}
}
