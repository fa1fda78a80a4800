package fsops

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

const (
	defaultGlobMaxMatches = 10000
	defaultGlobBudget     = 5 * time.Second
	maxSymlinkHops        = 40
)

// FileInfo describes one directory entry or match.
type FileInfo struct {
	Path    string // absolute
	IsDir   bool   // a symlink is never a dir (not followed)
	Size    int64
	ModTime time.Time
	Mode    fs.FileMode
}

// GlobOptions bound a glob; zero values mean the defaults.
type GlobOptions struct {
	MaxMatches int           // default 10000
	Budget     time.Duration // default 5s
}

// GlobResult is the outcome of Glob.
type GlobResult struct {
	Matches   []FileInfo // sorted by Path
	Truncated bool       // stopped at MaxMatches or Budget, or some dirs were unreadable
}

// Glob returns the regular files below the directory root that match
// pattern, with the deepagents 0.7 rules: a pattern without "/" matches the
// base name at any depth (hidden directories included); a pattern with "/"
// matches the root-relative path segment by segment, where "**" is zero or
// more segments that never enter hidden directories and a leading "/"
// anchors at root; a name starting with "." only matches a pattern segment
// starting with "."; "[!...]" and "[^...]" negate; matching is
// case-sensitive; "{a,b}" braces expand (nested too, at most 1000
// alternatives, else ErrPatternTooBroad); an empty pattern or a ".." segment
// is ErrInvalidPattern. Symbolic links to regular files inside root count
// (reported at the link's path, with the target's size, time and mode);
// broken links, links leaving root and links to directories are ignored.
// Unreadable subdirectories are skipped and set Truncated. When root is
// "/", /proc, /sys and /dev are not searched. Cancelling ctx returns
// ctx.Err().
func Glob(ctx context.Context, fsys fs.FS, root, pattern string, opt GlobOptions) (GlobResult, error) {
	const op = "glob"
	rootRel, err := fsPath(op, root)
	if err != nil {
		return GlobResult{}, err
	}
	pat, err := compilePattern(pattern)
	if err != nil {
		return GlobResult{}, &fs.PathError{Op: op, Path: root, Err: err}
	}
	if err := checkDir(fsys, op, root, rootRel); err != nil {
		return GlobResult{}, err
	}
	if opt.MaxMatches <= 0 {
		opt.MaxMatches = defaultGlobMaxMatches
	}
	if opt.Budget <= 0 {
		opt.Budget = defaultGlobBudget
	}

	links := newLinkResolver(fsys, rootRel)
	var res GlobResult
	w := &walker{
		ctx:      ctx,
		fsys:     fsys,
		root:     rootRel,
		deadline: time.Now().Add(opt.Budget),
		descend:  pat.mayDescend,
		visit: func(rel, sub string, d fs.DirEntry) error {
			t := d.Type()
			if (!t.IsRegular() && t&fs.ModeSymlink == 0) || !pat.match(sub) {
				return nil
			}
			var info fs.FileInfo
			var err error
			if t&fs.ModeSymlink != 0 {
				info = links.regular(rel)
			} else if info, err = d.Info(); err != nil {
				info = nil // vanished meanwhile
			}
			if info == nil {
				return nil
			}
			if len(res.Matches) >= opt.MaxMatches {
				res.Truncated = true
				return errStopWalk
			}
			res.Matches = append(res.Matches, FileInfo{
				Path: absPath(rel), Size: info.Size(), ModTime: info.ModTime(), Mode: info.Mode(),
			})
			return nil
		},
	}
	if err := w.run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return GlobResult{}, ctxErr
		}
		return GlobResult{}, pathError(op, root, err)
	}
	res.Truncated = res.Truncated || w.unreadable || w.timedOut
	slices.SortFunc(res.Matches, func(a, b FileInfo) int { return strings.Compare(a.Path, b.Path) })
	return res, nil
}

// checkDir returns a path error unless rel is a directory.
func checkDir(fsys fs.FS, op, name, rel string) error {
	info, err := fs.Stat(fsys, rel)
	if err != nil {
		return pathError(op, name, err)
	}
	if !info.IsDir() {
		return &fs.PathError{Op: op, Path: name, Err: ErrNotDir}
	}
	return nil
}

// linkResolver decides whether a symbolic link found by a walk leads to a
// regular file inside the walk root.
type linkResolver struct {
	fsys     fs.FS
	rl       fs.ReadLinkFS // nil: links are followed by fs.Stat and accepted
	rootReal string
}

func newLinkResolver(fsys fs.FS, root string) *linkResolver {
	lr := &linkResolver{fsys: fsys, rootReal: root}
	if rl, ok := fsys.(fs.ReadLinkFS); ok {
		lr.rl = rl
		if real, err := realPath(rl, root); err == nil {
			lr.rootReal = real
		}
	}
	return lr
}

// regular returns the target's info if the link rel resolves to a regular
// file inside the root, else nil.
func (lr *linkResolver) regular(rel string) fs.FileInfo {
	target := rel
	if lr.rl != nil {
		real, err := realPath(lr.rl, rel)
		if err != nil || !within(real, lr.rootReal) {
			return nil
		}
		target = real
	}
	info, err := fs.Stat(lr.fsys, target)
	if err != nil || !info.Mode().IsRegular() {
		return nil
	}
	return info
}

// within reports whether the fs.FS name p is dir or below it.
func within(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

var errTooManyLinks = errors.New("too many levels of symbolic links")

// realPath resolves every symbolic link in the fs.FS name like realpath(3);
// absolute link targets are taken relative to the root of fsys, which
// stands for "/".
func realPath(fsys fs.ReadLinkFS, name string) (string, error) {
	resolved, rest, hops := ".", name, 0
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, "/")
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := joinRel(resolved, part)
		info, err := fsys.Lstat(next)
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", errTooManyLinks
		}
		target, err := fsys.ReadLink(next)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			resolved = "."
		}
		if rest != "" {
			target += "/" + rest
		}
		rest = target
	}
	return resolved, nil
}
