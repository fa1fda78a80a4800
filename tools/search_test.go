package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func infos(paths ...string) []sandbox.FileInfo {
	out := make([]sandbox.FileInfo, len(paths))
	for i, p := range paths {
		out[i] = sandbox.FileInfo{Path: p}
	}
	return out
}

func TestLs(t *testing.T) {
	tests := []struct {
		name    string
		entries []sandbox.FileInfo
		err     error
		want    string
		isErr   bool
	}{
		{"entries", infos("/workspace/a.txt", "/workspace/sub"), nil, "['/workspace/a.txt', '/workspace/sub']", false},
		{"quotes", infos("/w/it's", `/w/"q"`, `/w/'"`), nil, `["/w/it's", '/w/"q"', '/w/\'"']`, false},
		{"empty", nil, nil, "No files found", false},
		{"missing", nil, pathErr("ls", "/workspace/x", fs.ErrNotExist), "Error: Path '/workspace/x': path_not_found", true},
		{"not a dir", nil, pathErr("ls", "/workspace/x", textErr{"not a directory", sandbox.ErrNotDir}), "Error: Path '/workspace/x': not_a_directory", true},
		{"permission", nil, pathErr("ls", "/workspace/x", fs.ErrPermission), "Error: Path '/workspace/x': permission_denied", true},
		{"closed", nil, sandbox.ErrClosed, "Error: Path '/workspace/x': sandbox: closed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.ls = func(string) ([]sandbox.FileInfo, error) { return tt.entries, tt.err }
			res := call(t, f, "ls", `{"path": "x"}`)
			assert.Equal(t, tt.want, res.Text)
			assert.Equal(t, tt.isErr, res.IsError)
		})
	}
}

func TestLsTruncation(t *testing.T) {
	// 2000 paths of 50 characters: 100000 > 80000, so 2000*80000/100000 = 1600 are kept.
	var paths []string
	for i := range 2000 {
		paths = append(paths, fmt.Sprintf("/workspace/%039d", i))
	}
	f := newFake()
	f.ls = func(string) ([]sandbox.FileInfo, error) { return infos(paths...), nil }
	res := call(t, f, "ls", `{"path": "/workspace"}`)
	assert.Equal(t, pyList(append(paths[:1600:1600], truncationGuidance)), res.Text)
	assert.True(t, strings.HasSuffix(res.Text, ", '... [results truncated, try being more specific with your parameters]']"))
}

func TestTruncateText(t *testing.T) {
	assert.Equal(t, "abc", truncateText("abc"))
	s := strings.Repeat("é", maxResultChars)
	assert.Equal(t, s, truncateText(s))
	assert.Equal(t, s+"\n"+truncationGuidance, truncateText(s+"xyz"))
}

func TestGlob(t *testing.T) {
	tests := []struct {
		name string
		res  sandbox.GlobResult
		err  error
		want string
	}{
		{"matches", sandbox.GlobResult{Matches: infos("/workspace/a.py", "/workspace/src/b.py")}, nil, "['/workspace/a.py', '/workspace/src/b.py']"},
		{"none", sandbox.GlobResult{}, nil, "No files found"},
		{"truncated", sandbox.GlobResult{Matches: infos("/a.py"), Truncated: true}, nil,
			"['/a.py']\n\nNote: the search stopped early because it hit its time limit. The paths above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path) to see the rest."},
		{"invalid pattern", sandbox.GlobResult{}, pathErr("glob", "/workspace", textErr{"invalid pattern", sandbox.ErrInvalidPattern}), "Error: Path '/workspace': invalid_pattern"},
		{"too broad", sandbox.GlobResult{}, pathErr("glob", "/workspace", sandbox.ErrPatternTooBroad), "Error: Path '/workspace': pattern_too_broad"},
		{"missing root", sandbox.GlobResult{}, pathErr("glob", "/workspace", fs.ErrNotExist), "Error: Path '/workspace': path_not_found"},
		{"not a dir", sandbox.GlobResult{}, pathErr("glob", "/workspace", sandbox.ErrNotDir), "Error: Path '/workspace': not_a_directory"},
		{"sandbox gone", sandbox.GlobResult{}, fmt.Errorf("%w: exited", sandbox.ErrGone), "Error: glob failed: sandbox: container is gone: exited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.glob = func(context.Context, string, string) (sandbox.GlobResult, error) { return tt.res, tt.err }
			res := call(t, f, "glob", `{"pattern": "*.py"}`)
			assert.Equal(t, tt.want, res.Text)
			assert.Equal(t, tt.err != nil, res.IsError)
		})
	}
}

func TestGlobTimeout(t *testing.T) {
	f := newFake()
	f.glob = func(ctx context.Context, _, _ string) (sandbox.GlobResult, error) {
		<-ctx.Done()
		return sandbox.GlobResult{}, ctx.Err()
	}
	res := callOpts(t, f, Options{GlobTimeout: 50 * time.Millisecond}, "glob", `{"pattern": "**/*"}`)
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: glob timed out after 0.05s. Try a more specific pattern or a narrower path.", res.Text)

	assert.Equal(t, "10.0", pyFloat(defaultGlobTimeout.Seconds()), "deepagents prints GLOB_TIMEOUT = 10.0")

	// The caller's own cancellation is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tool, _ := Lookup(New(f, Options{}), "glob")
	res = tool.Call(ctx, []byte(`{"pattern": "*"}`))
	assert.Equal(t, "Error: glob failed: context canceled", res.Text)
}

func matches(ms ...string) []sandbox.GrepMatch {
	var out []sandbox.GrepMatch
	for _, m := range ms {
		var gm sandbox.GrepMatch
		p, rest, _ := strings.Cut(m, ":")
		var line int
		var text string
		n, _ := fmt.Sscanf(rest, "%d:", &line)
		if n == 1 {
			_, text, _ = strings.Cut(rest, ":")
		}
		gm.Path, gm.Line, gm.Text = p, line, text
		out = append(out, gm)
	}
	return out
}

func TestGrepOutputModes(t *testing.T) {
	ms := matches("/w/b.txt:3:b three", "/w/a.txt:1:a one", "/w/a.txt:7:a seven: colon", "/w/c d.txt:2:")
	tests := []struct{ mode, want string }{
		{"", "/w/a.txt\n/w/b.txt\n/w/c d.txt"},
		{`, "output_mode": "files_with_matches"`, "/w/a.txt\n/w/b.txt\n/w/c d.txt"},
		{`, "output_mode": "count"`, "/w/a.txt: 2\n/w/b.txt: 1\n/w/c d.txt: 1"},
		{`, "output_mode": "content"`, "/w/a.txt:\n  1: a one\n  7: a seven: colon\n/w/b.txt:\n  3: b three\n/w/c d.txt:\n  2: "},
	}
	for _, tt := range tests {
		f := newFake()
		f.grep = func(string) (sandbox.GrepResult, error) { return sandbox.GrepResult{Matches: ms}, nil }
		res := call(t, f, "grep", `{"pattern": "a"`+tt.mode+`}`)
		assert.False(t, res.IsError)
		assert.Equal(t, tt.want, res.Text, tt.mode)
	}
}

func TestGrepResults(t *testing.T) {
	tests := []struct {
		name, pattern string
		res           sandbox.GrepResult
		err           error
		want          string
		isErr         bool
	}{
		{"no match", "x", sandbox.GrepResult{}, nil, "No matches found", false},
		{"truncated", "x", sandbox.GrepResult{Matches: matches("/a:1:x"), Truncated: true}, nil,
			"/a\n\nNote: the search stopped early (it hit its time limit or the maximum match count). The matches above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path), or raise max_count, to see the rest.", false},
		{"alternation hint", "foo|bar", sandbox.GrepResult{}, nil, "No matches found\n\n" + grepLiteralHint, false},
		{"dot-star hint", "def .*init", sandbox.GrepResult{}, nil, "No matches found\n\n" + grepLiteralHint, false},
		{"dot-plus hint", "a.+b", sandbox.GrepResult{}, nil, "No matches found\n\n" + grepLiteralHint, false},
		{"escape hint", `foo\.bar`, sandbox.GrepResult{}, nil, "No matches found\n\n" + grepLiteralHint, false},
		{"class hint", `\d+`, sandbox.GrepResult{}, nil, "No matches found\n\n" + grepLiteralHint, false},
		{"no hint with matches", "a|b", sandbox.GrepResult{Matches: matches("/a:1:a|b")}, nil, "/a", false},
		{"no hint for plain text", "foo(bar)", sandbox.GrepResult{}, nil, "No matches found", false},
		{"no hint for a path", `C:\Users`, sandbox.GrepResult{}, nil, "No matches found", false},
		{"missing path", "x", sandbox.GrepResult{}, pathErr("grep", "/workspace", fs.ErrNotExist), "Path '/workspace': path_not_found", true},
		{"empty pattern", "", sandbox.GrepResult{}, pathErr("grep", "/workspace", sandbox.ErrInvalidPattern), "Path '/workspace': invalid_pattern", true},
		{"cancelled", "x", sandbox.GrepResult{}, context.Canceled, "Path '/workspace': context canceled", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.grep = func(string) (sandbox.GrepResult, error) { return tt.res, tt.err }
			res := call(t, f, "grep", fmt.Sprintf(`{"pattern": %q}`, tt.pattern))
			assert.Equal(t, tt.want, res.Text)
			assert.Equal(t, tt.isErr, res.IsError)
		})
	}
	assert.True(t, strings.HasPrefix(grepLiteralHint, "Note: grep searches for the pattern as literal text"))
}

func TestGrepOptions(t *testing.T) {
	f := newFake()
	call(t, f, "grep", `{"pattern": "x", "glob": "*.go", "path": "/src", "max_count": 5}`)
	assert.Equal(t, "grep x /src [GrepMaxCount GrepGlob]", f.lastCall())
	call(t, f, "grep", `{"pattern": "x", "glob": ""}`)
	assert.Equal(t, "grep x /workspace [GrepMaxCount]", f.lastCall(), "an empty glob filters nothing")
}

func TestGrepTruncation(t *testing.T) {
	var ms []sandbox.GrepMatch
	for i := range 1000 {
		ms = append(ms, sandbox.GrepMatch{Path: fmt.Sprintf("/w/%04d.txt", i), Line: 1, Text: strings.Repeat("x", 100)})
	}
	f := newFake()
	f.grep = func(string) (sandbox.GrepResult, error) { return sandbox.GrepResult{Matches: ms, Truncated: true}, nil }
	res := call(t, f, "grep", `{"pattern": "x", "output_mode": "content"}`)
	require.False(t, res.IsError)
	body, note, ok := strings.Cut(res.Text, "\n... [results truncated, try being more specific with your parameters]")
	require.True(t, ok)
	assert.Equal(t, maxResultChars, runeLen(body))
	assert.Equal(t, "\n\n"+grepTruncationNote, note)
}

func TestErrorsAreMatchedByKind(t *testing.T) {
	// Wrapped errors keep their meaning.
	err := fmt.Errorf("wrapped: %w", pathErr("ls", "/x", fs.ErrNotExist))
	assert.Equal(t, "Path '/x': path_not_found", pathError("/x", err))
	assert.Equal(t, "Path '/x': boom", pathError("/x", errors.New("boom")))
}
