package sandbox

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// GlobResult lists the files a glob matched.
type GlobResult struct {
	Matches   []FileInfo // regular files, absolute paths, sorted
	Truncated bool       // the search stopped early (time or count budget, unreadable dirs)
}

// Glob finds regular files under path whose path matches pattern, with
// deepagents 0.7's rules: a pattern without "/" matches the base name at
// any depth; with "/" it matches the path relative to path, "**" spanning
// directories; {a,b} braces expand; dot-files match only a pattern part
// that starts with "."; ".." is ErrInvalidPattern. Searching "/" skips
// /proc, /sys and /dev.
//
// Glob and Grep take the search path the same way: an argument, absolute
// or relative to the working directory, "" meaning the working directory.
// That is where every other relative path of the library resolves, and
// what the agent tools search by default (tools.New); deepagents' Python
// glob defaulted to "/", a walk of the whole container, and its grep to
// the working directory.
func (s *DockerSandbox) Glob(ctx context.Context, pattern, path string) (GlobResult, error) {
	p, err := s.abs("glob", searchPath(path))
	if err != nil {
		return GlobResult{}, err
	}
	res, err := s.fileCall(ctx, "glob", p, proto.Request{Op: proto.OpGlob, Path: p, Pattern: pattern}, nil)
	if err != nil {
		return GlobResult{}, err
	}
	return GlobResult{Matches: fileInfos(res.Entries), Truncated: res.Truncated}, nil
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string // absolute
	Line int    // 1-based
	Text string // the line without its line end (at most 64 KiB of it)
}

// GrepResult lists the lines Grep found.
type GrepResult struct {
	Matches   []GrepMatch // by path, then line
	Truncated bool        // more matches than the max count, or the 5 s time budget ran out
}

// A GrepOption adjusts Grep.
type GrepOption func(*grepConfig) error

type grepConfig struct {
	glob     string
	maxCount int
}

// searchPath is the search root of Glob and Grep: "" is the working
// directory.
func searchPath(path string) string {
	if path == "" {
		return "."
	}
	return path
}

// GrepGlob searches only files matching pattern: without "/" it matches
// base names at any depth, with "/" paths relative to the search root.
// Unlike Glob, and like GNU grep's --include, wildcards match a leading
// ".": "*.go" selects ".hidden.go".
func GrepGlob(pattern string) GrepOption {
	return func(c *grepConfig) error {
		c.glob = pattern
		return nil
	}
}

// GrepMaxCount stops after n matches and sets Truncated if there were more.
func GrepMaxCount(n int) GrepOption {
	return func(c *grepConfig) error {
		if n <= 0 {
			return fmt.Errorf("sandbox: grep max count %d must be positive", n)
		}
		c.maxCount = n
		return nil
	}
}

// Grep finds lines containing pattern, a literal string (not a regular
// expression), in path (a file, or the regular files under a directory),
// hidden files included and binary files skipped. path is absolute or
// relative to the working directory; "" means the working directory, as
// for Glob.
func (s *DockerSandbox) Grep(ctx context.Context, pattern, path string, opts ...GrepOption) (GrepResult, error) {
	var cfg grepConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			return GrepResult{}, err
		}
	}
	p, err := s.abs("grep", searchPath(path))
	if err != nil {
		return GrepResult{}, err
	}
	res, err := s.fileCall(ctx, "grep", p, proto.Request{Op: proto.OpGrep, Path: p, Pattern: pattern, Glob: cfg.glob, MaxCount: cfg.maxCount}, nil)
	if err != nil {
		return GrepResult{}, err
	}
	out := GrepResult{Matches: make([]GrepMatch, len(res.Matches)), Truncated: res.Truncated}
	for i, m := range res.Matches {
		out.Matches[i] = GrepMatch{Path: m.Path, Line: m.Line, Text: m.Text}
	}
	return out, nil
}
