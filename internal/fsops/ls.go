package fsops

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
)

// Ls lists the directory dir one level deep, sorted by name, dot-files
// included, with absolute paths (no trailing slash) and Lstat information
// (symbolic links are not followed, so a link to a directory has IsDir
// false). A missing dir is an fs.ErrNotExist error, a non-directory is
// ErrNotDir. dir itself may be a symbolic link to a directory.
func Ls(fsys fs.FS, dir string) ([]FileInfo, error) {
	const op = "ls"
	rel, err := fsPath(op, dir)
	if err != nil {
		return nil, err
	}
	if err := checkDir(fsys, op, dir, rel); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(fsys, rel)
	if err != nil {
		return nil, pathError(op, dir, err)
	}
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		fi := FileInfo{Path: absPath(joinRel(rel, e.Name())), Mode: e.Type()}
		info, err := e.Info()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // removed while listing
		case err == nil:
			fi.Size, fi.ModTime, fi.Mode = info.Size(), info.ModTime(), info.Mode()
		}
		fi.IsDir = fi.Mode.IsDir()
		out = append(out, fi)
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
