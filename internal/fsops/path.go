package fsops

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// fsPath converts an absolute slash path into an fs.FS name ("/" → ".",
// "/a/b" → "a/b"). A relative path is an ErrInvalidPath error for op.
func fsPath(op, name string) (string, error) {
	if !strings.HasPrefix(name, "/") {
		return "", &fs.PathError{Op: op, Path: name, Err: ErrInvalidPath}
	}
	rel := strings.TrimPrefix(path.Clean(name), "/")
	if rel == "" {
		rel = "."
	}
	if !validName(rel) { // names are bytes: fs.ValidPath would refuse non-UTF-8 ones
		return "", &fs.PathError{Op: op, Path: name, Err: ErrInvalidPath}
	}
	return rel, nil
}

// absPath converts an fs.FS name back into an absolute slash path.
func absPath(rel string) string {
	if rel == "." {
		return "/"
	}
	return "/" + rel
}

// joinRel joins an fs.FS directory name and an entry name.
func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// subPath returns rel relative to the fs.FS directory root (rel must be
// inside root and differ from it).
func subPath(root, rel string) string {
	if root == "." {
		return rel
	}
	return rel[len(root)+1:]
}

// pathError re-labels err (usually an fs *PathError carrying an fs-relative
// or host path) as a *fs.PathError for op on the absolute path name.
func pathError(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}
