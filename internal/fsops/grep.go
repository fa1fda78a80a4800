package fsops

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"time"
)

const (
	// maxGrepText is the most of a matching line's text a GrepMatch keeps.
	maxGrepText = 64 << 10
	// grepCtxEvery is how many lines pass between context and budget checks.
	grepCtxEvery = 4096
	// defaultGrepBudget bounds a search's time, as Glob's default budget does.
	defaultGrepBudget = 5 * time.Second
)

// GrepOptions tune Grep.
type GrepOptions struct {
	// Glob is an optional file filter: without "/" it matches the base
	// name at any depth, with "/" the root-relative path (Glob's matcher,
	// except that "*", "?" and "**" also match names starting with ".", as
	// GNU grep's --include does).
	Glob     string
	MaxCount int           // stop after this many matches (0 = unlimited); more available → Truncated
	Budget   time.Duration // stop after this long (default 5s) → Truncated
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string // absolute
	Line int    // 1-based
	Text string // the line without its "\n" or "\r\n" terminator; cut to at most 64 KiB on a UTF-8 boundary
}

// GrepResult is the outcome of Grep.
type GrepResult struct {
	Matches   []GrepMatch // ordered by path (lexical walk order), then line
	Truncated bool        // MaxCount stopped the search while more matches existed, or the Budget ran out
}

// Grep searches root for lines containing pattern as a literal,
// case-sensitive substring (not a regular expression). root is a directory
// searched recursively (hidden files included, symbolic links not
// followed, only regular files opened) or a single regular file (then
// opt.Glob is matched against its base name). A file whose first 8192
// bytes contain a NUL byte is skipped as binary; a NUL found later ends
// the search of that file, keeping its earlier matches. Lines of any length
// are searched in bounded memory. Unreadable files and directories are
// skipped silently. When root is "/", /proc, /sys and /dev are not
// searched. An empty pattern or invalid opt.Glob is ErrInvalidPattern (or
// ErrPatternTooBroad); cancelling ctx returns ctx.Err().
func Grep(ctx context.Context, fsys fs.FS, root, pattern string, opt GrepOptions) (GrepResult, error) {
	const op = "grep"
	rootRel, err := fsPath(op, root)
	if err != nil {
		return GrepResult{}, err
	}
	if pattern == "" {
		return GrepResult{}, &fs.PathError{Op: op, Path: root, Err: ErrInvalidPattern}
	}
	var filter *globPattern
	if opt.Glob != "" {
		if filter, err = compileFilter(opt.Glob); err != nil {
			return GrepResult{}, &fs.PathError{Op: op, Path: root, Err: err}
		}
	}
	info, err := fs.Stat(fsys, rootRel)
	if err != nil {
		return GrepResult{}, pathError(op, root, err)
	}

	if opt.Budget <= 0 {
		opt.Budget = defaultGrepBudget
	}
	deadline := time.Now().Add(opt.Budget)
	g := &grepper{ctx: ctx, fsys: fsys, pat: []byte(pattern), max: opt.MaxCount, deadline: deadline}
	switch {
	case info.Mode().IsRegular():
		if filter == nil || filter.match(path.Base(rootRel)) {
			err = g.file(rootRel)
		}
	case info.IsDir():
		w := &walker{ctx: ctx, fsys: fsys, root: rootRel, deadline: deadline,
			visit: func(rel, sub string, d fs.DirEntry) error {
				if !d.Type().IsRegular() || (filter != nil && !filter.match(sub)) {
					return nil
				}
				return g.file(rel)
			},
		}
		err = w.run()
		g.res.Truncated = g.res.Truncated || w.timedOut
	default:
		return GrepResult{}, &fs.PathError{Op: op, Path: root, Err: ErrNotRegular}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return GrepResult{}, ctxErr
	}
	if err != nil && err != errStopWalk {
		return GrepResult{}, pathError(op, root, err)
	}
	return g.res, nil
}

// grepper accumulates the matches of one Grep call.
type grepper struct {
	ctx  context.Context
	fsys fs.FS
	pat  []byte
	max  int
	res  GrepResult

	deadline time.Time // the budget's end: the search stops, Truncated
}

// file searches one regular file. It returns errStopWalk at MaxCount, or
// ctx's error; a file that cannot be read is skipped.
func (g *grepper) file(rel string) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	f, err := g.fsys.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil
	}
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return nil // binary
	}
	lr := newLineReader(io.MultiReader(bytes.NewReader(head[:n]), f), false)
	ls := lineSearcher{pat: g.pat}
	for line := 1; ; line++ {
		if line%grepCtxEvery == 0 {
			if err := g.ctx.Err(); err != nil {
				return err
			}
			if time.Now().After(g.deadline) {
				g.res.Truncated = true
				return errStopWalk
			}
		}
		ls.reset()
		binary := false
		ok, err := lr.readLine(func(c []byte) bool {
			if bytes.IndexByte(c, 0) >= 0 {
				binary = true
				return false
			}
			ls.feed(c)
			return true
		})
		if !ok || err != nil || binary {
			return nil
		}
		if !ls.found {
			continue
		}
		if g.max > 0 && len(g.res.Matches) >= g.max {
			g.res.Truncated = true
			return errStopWalk
		}
		g.res.Matches = append(g.res.Matches, GrepMatch{Path: absPath(rel), Line: line, Text: string(ls.text)})
	}
}

// lineSearcher looks for a literal pattern in a line fed in chunks, keeping
// only len(pat)-1 bytes of overlap and the first maxGrepText bytes of text.
type lineSearcher struct {
	pat   []byte
	found bool
	text  []byte
	cut   bool   // text is complete: a chunk did not fit whole
	win   []byte // overlap from earlier chunks followed by the current chunk
}

func (s *lineSearcher) reset() {
	s.found, s.cut = false, false
	s.text = s.text[:0]
	s.win = s.win[:0]
}

// feed adds the next chunk of the line; chunks never split a UTF-8 sequence.
func (s *lineSearcher) feed(c []byte) {
	if !s.cut {
		// Once a chunk is cut, later ones must not be appended: the text
		// would skip the character that did not fit.
		n := cutUTF8(c, maxGrepText-len(s.text))
		s.text = append(s.text, c[:n]...)
		s.cut = n < len(c)
	}
	if s.found {
		return
	}
	s.win = append(s.win, c...)
	if bytes.Contains(s.win, s.pat) {
		s.found = true
		return
	}
	keep := min(len(s.pat)-1, len(s.win))
	s.win = append(s.win[:0], s.win[len(s.win)-keep:]...)
}
