package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// The search tools: glob and grep.

// Notes appended to partial search results (deepagents 0.7's
// GLOB_TRUNCATION_NOTE and GREP_TRUNCATION_NOTE), and the hint for a
// pattern that looks like a regular expression but found nothing.
const (
	globTruncationNote = "Note: the search stopped early because it hit its time limit. The paths above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path) to see the rest."
	grepTruncationNote = "Note: the search stopped early (it hit its time limit or the maximum match count). The matches above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path), or raise max_count, to see the rest."
	grepLiteralHint    = "Note: grep searches for the pattern as literal text, not as a regular expression, so characters such as `|`, `.*`, `.+` and `\\.` only match themselves. Search for the exact text you expect, and run one search per alternative instead of combining them with `|`."
)

func (e *env) glob(ctx context.Context, a *args) Result {
	pattern, _ := a.str("pattern", true)
	dir, hasDir := a.path("path", false)
	if r, bad := a.done(); bad {
		return r
	}
	root := e.wd
	switch {
	case hasDir:
		p, msg := e.resolve(dir)
		if msg != "" {
			return errorText(msg)
		}
		root = p
	case strings.HasPrefix(pattern, "/"):
		root = "/" // an absolute pattern without a path means what it says
	}
	gctx, cancel := context.WithTimeout(ctx, e.opts.GlobTimeout)
	defer cancel()
	res, err := e.sb.Glob(gctx, pattern, root)
	if err != nil {
		var pe *fs.PathError
		switch {
		case ctx.Err() == nil && gctx.Err() != nil:
			return errorf("Error: glob timed out after %ss. Try a more specific pattern or a narrower path.", pyFloat(e.opts.GlobTimeout.Seconds()))
		case errors.As(err, &pe):
			return errorText("Error: " + pathError(root, err))
		}
		return errorText("Error: glob failed: " + err.Error())
	}
	paths := make([]string, len(res.Matches))
	for i, m := range res.Matches {
		paths[i] = m.Path
	}
	out := formatPaths(paths)
	if res.Truncated {
		out += "\n\n" + globTruncationNote
	}
	return text(out)
}

// grep output modes.
var outputModes = []string{"files_with_matches", "content", "count"}

func (e *env) grep(ctx context.Context, a *args) Result {
	pattern, _ := a.str("pattern", true)
	dir, hasDir := a.path("path", false)
	glob, hasGlob := a.str("glob", false)
	mode, hasMode := a.str("output_mode", false)
	if !hasMode {
		mode = outputModes[0]
	} else if !slices.Contains(outputModes, mode) {
		a.problem(`"output_mode" must be one of "files_with_matches", "content" or "count", got %q`, mode)
	}
	maxCount, hasMax := a.integer("max_count")
	if !hasMax {
		maxCount = e.opts.GrepMaxCount
	} else if maxCount <= 0 {
		a.problem(`"max_count" must be greater than 0, got %d`, maxCount)
	}
	if r, bad := a.done(); bad {
		return r
	}
	root := e.wd
	if hasDir {
		p, msg := e.resolve(dir)
		if msg != "" {
			return errorText(msg)
		}
		root = p
	}
	opts := []sandbox.GrepOption{sandbox.GrepMaxCount(maxCount)}
	if hasGlob && glob != "" {
		opts = append(opts, sandbox.GrepGlob(glob))
	}
	res, err := e.sb.Grep(ctx, pattern, root, opts...)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return errorText(pathError(root, err))
		}
		return errorf("Path '%s': %s", showName(root), err)
	}
	out := truncateText(sandbox.SafeText(formatGrep(res.Matches, mode))) // SafeText: as execute
	switch {
	case res.Truncated:
		out += "\n\n" + grepTruncationNote
	case len(res.Matches) == 0 && looksLikeRegex(pattern):
		out += "\n\n" + grepLiteralHint
	}
	return text(out)
}

// formatGrep is deepagents' format_grep_matches: "No matches found", or the
// matching files sorted (files_with_matches), "path: n" lines (count), or
// a "path:" line per file followed by "  line: text" lines (content).
func formatGrep(matches []sandbox.GrepMatch, mode string) string {
	if len(matches) == 0 {
		return "No matches found"
	}
	byPath := map[string][]sandbox.GrepMatch{}
	var paths []string
	for _, m := range matches {
		if _, ok := byPath[m.Path]; !ok {
			paths = append(paths, m.Path)
		}
		byPath[m.Path] = append(byPath[m.Path], m)
	}
	slices.Sort(paths)
	var lines []string
	for _, p := range paths {
		switch mode {
		case "count":
			lines = append(lines, fmt.Sprintf("%s: %d", showName(p), len(byPath[p])))
		case "content":
			lines = append(lines, showName(p)+":")
			for _, m := range byPath[p] {
				lines = append(lines, fmt.Sprintf("  %d: %s", m.Line, m.Text))
			}
		default:
			lines = append(lines, showName(p))
		}
	}
	return strings.Join(lines, "\n")
}

// looksLikeRegex reports whether a literal pattern was probably meant as a
// regular expression: it has "|", ".*", ".+" or a backslash before a
// metacharacter or a class letter.
func looksLikeRegex(pattern string) bool {
	if strings.Contains(pattern, "|") || strings.Contains(pattern, ".*") || strings.Contains(pattern, ".+") {
		return true
	}
	for i := 0; i+1 < len(pattern); i++ {
		if pattern[i] == '\\' && strings.IndexByte(`.^$*+?()[]{}|\dDwWsSbB`, pattern[i+1]) >= 0 {
			return true
		}
	}
	return false
}
