package fsops

import (
	"context"
	"errors"
	"io/fs"
	"time"
)

// virtualDirs are the top-level directories a walk from "/" never enters.
var virtualDirs = map[string]bool{"proc": true, "sys": true, "dev": true}

// errStopWalk ends a walk early without an error.
var errStopWalk = errors.New("stop walk")

// walker walks a directory tree depth-first in lexical order, without
// following symbolic links to directories.
type walker struct {
	ctx      context.Context
	fsys     fs.FS
	root     string    // fs.FS name of the walk root
	deadline time.Time // zero: none
	// descend reports whether to enter a directory (root-relative path).
	descend func(sub string) bool
	// visit is called for every non-directory entry (root-relative path).
	visit func(rel, sub string, d fs.DirEntry) error

	unreadable bool // some directory below the root could not be read
	timedOut   bool // the deadline stopped the walk
}

// run walks the tree. It returns the root's read error, ctx's error, or
// visit's error other than errStopWalk.
func (w *walker) run() error {
	err := w.dir(w.root)
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

func (w *walker) dir(rel string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := fs.ReadDir(w.fsys, rel)
	if err != nil {
		if rel == w.root && len(entries) == 0 {
			return err
		}
		w.unreadable = true
	}
	for _, e := range entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if !w.deadline.IsZero() && time.Now().After(w.deadline) {
			w.timedOut = true
			return errStopWalk
		}
		child := joinRel(rel, e.Name())
		sub := subPath(w.root, child)
		if !e.IsDir() { // symlinks to directories are not directories here
			if err := w.visit(child, sub, e); err != nil {
				return err
			}
			continue
		}
		if rel == "." && virtualDirs[e.Name()] {
			continue
		}
		if w.descend != nil && !w.descend(sub) {
			continue
		}
		if err := w.dir(child); err != nil {
			return err
		}
	}
	return nil
}
