package fsops

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		// No "/": base name at any depth, hidden directories included.
		{"*.py", []string{"a.py", "src/a.py", "src/deep/a.py", ".venv/lib/a.py"}, []string{".a.py", "a.pyc", "a.PY", "py"}},
		{".*", []string{".env", "x/.env", ".a.py"}, []string{"env", "x/env"}},
		{"**", []string{"a", "x/y/z"}, []string{".env", "x/.env"}},
		{"?.go", []string{"a.go", "é.go", "d/😀.go"}, []string{"ab.go", ".go"}},
		{"[!a]*", []string{"b", "x/bc"}, []string{"a", "abc"}},
		{"[^a]*", []string{"b"}, []string{"a", "abc"}},
		{"[a-c].txt", []string{"a.txt", "b.txt", "c.txt"}, []string{"d.txt", "-.txt"}},
		{"[]].txt", []string{"].txt"}, []string{"a.txt"}},
		{"[!]].txt", []string{"a.txt"}, []string{"].txt"}},
		{"[ab-].txt", []string{"a.txt", "-.txt"}, []string{"c.txt"}},
		{"[.txt", []string{"[.txt"}, []string{"a.txt"}},
		{`a\*`, []string{`a\b`}, []string{"a*"}},
		{"*a*b*c*", []string{"xaybzc", "abc"}, []string{"acb"}},
		// With "/": root-relative and segment-wise.
		{"src/*.py", []string{"src/a.py"}, []string{"a.py", "src/x/a.py", "lib/src/a.py", "src/.a.py"}},
		{"*/*.py", []string{"src/a.py"}, []string{".git/a.py", "a.py", "a/b/c.py"}},
		{"**/*.py", []string{"a.py", "x/a.py", "x/y/z/a.py"}, []string{".git/a.py", "x/.cache/a.py", ".a.py"}},
		{"src/**/*.go", []string{"src/a.go", "src/x/y/a.go"}, []string{"a.go", "src/.x/a.go"}},
		{"src/**", []string{"src/a", "src/x/y"}, []string{"src/.env", "src/.d/x", "lib/a"}},
		{"**/.env", []string{".env", "a/.env", "a/b/.env"}, []string{".x/.env", "env"}},
		{".github/**/*.yml", []string{".github/ci.yml", ".github/workflows/ci.yml"}, []string{"github/ci.yml"}},
		{"/*.py", []string{"a.py"}, []string{"x/a.py"}},
		{"/src/a.py", []string{"src/a.py"}, []string{"x/src/a.py"}},
		{"./src/a.py", []string{"src/a.py"}, nil},
		{"a//b", []string{"a/b"}, nil},
		{"**/**/x", []string{"x", "a/x", "a/b/x"}, nil},
		{"src/", nil, []string{"src", "src/a"}},
		{"/", nil, []string{"", "a"}},
		// Braces.
		{"*.{py,go}", []string{"a.py", "d/b.go"}, []string{"c.rs"}},
		{"{a,b{c,d}}.txt", []string{"a.txt", "bc.txt", "bd.txt"}, []string{"b.txt", "bcd.txt"}},
		{"{src,lib}/*.go", []string{"src/a.go", "lib/b.go"}, []string{"a.go", "x/src/a.go"}},
		{"{*.md,docs/*.txt}", []string{"x/README.md", "docs/a.txt"}, []string{"x/docs/a.txt"}},
		{"{a}.txt", []string{"{a}.txt"}, []string{"a.txt"}},
		{"{a,b.txt", []string{"{a,b.txt"}, []string{"a", "b.txt"}},
		{"{{a,b}}", []string{"{a}", "{b}"}, []string{"a"}},
		{"x{,.bak}", []string{"x", "x.bak"}, nil},
	}
	for _, tt := range tests {
		for _, rel := range tt.yes {
			ok, err := MatchPath(tt.pattern, rel)
			require.NoError(t, err, tt.pattern)
			assert.True(t, ok, "%q should match %q", tt.pattern, rel)
		}
		for _, rel := range tt.no {
			ok, err := MatchPath(tt.pattern, rel)
			require.NoError(t, err, tt.pattern)
			assert.False(t, ok, "%q should not match %q", tt.pattern, rel)
		}
	}
	ok, err := MatchPath("src/*.go", "/src/a.go")
	require.NoError(t, err)
	assert.True(t, ok, "a leading slash on rel is ignored")
}

func TestMatchPathErrors(t *testing.T) {
	alts := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(i)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		pattern string
		err     error
	}{
		{"", ErrInvalidPattern},
		{"..", ErrInvalidPattern},
		{"../x", ErrInvalidPattern},
		{"a/../b", ErrInvalidPattern},
		{"/..", ErrInvalidPattern},
		{"{..,a}/x", ErrInvalidPattern},
		{strings.Repeat("x", maxPatternLen+1), ErrInvalidPattern},
		{strings.Repeat("{a,b}", 10), ErrPatternTooBroad}, // 1024
		{alts(1001), ErrPatternTooBroad},
		{"{" + alts(600) + "," + alts(401) + "}", ErrPatternTooBroad},
		{strings.Repeat("{a,b}", 40), ErrPatternTooBroad}, // 2^40: refused before expanding
	}
	for _, tt := range tests {
		_, err := MatchPath(tt.pattern, "a")
		assert.ErrorIs(t, err, tt.err, "%.40q", tt.pattern)
	}
	for _, ok := range []string{strings.Repeat("{a,b}", 9), alts(1000), "...", "a..b", "x/.../y"} {
		_, err := MatchPath(ok, "a")
		assert.NoError(t, err, "%.40q", ok)
	}
}

func TestExpandBraces(t *testing.T) {
	tests := map[string][]string{
		"plain":        {"plain"},
		"{a,b}":        {"a", "b"},
		"x{a,b}y{1,2}": {"xay1", "xay2", "xby1", "xby2"},
		"{a,b{c,d}e}":  {"a", "bce", "bde"},
		"{}":           {"{}"},
		"{,}":          {"", ""},
		"}{a,b}{":      {"}a{", "}b{"},
		"{x,{a,b}":     {"{x,a", "{x,b"},
		"{a{b,c}":      {"{ab", "{ac"},
	}
	for in, want := range tests {
		got, err := expandBraces(in, maxBraceAlternatives)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
}

func TestMayDescend(t *testing.T) {
	p, err := compilePattern("src/*/x.go")
	require.NoError(t, err)
	assert.True(t, p.mayDescend("src"))
	assert.True(t, p.mayDescend("src/a"))
	assert.False(t, p.mayDescend("src/a/b"), "a file below would have too many segments")
	assert.False(t, p.mayDescend("lib"))
	assert.False(t, p.mayDescend("src/.git"))

	p, err = compilePattern("**/*.go")
	require.NoError(t, err)
	assert.True(t, p.mayDescend("a/b/c"))
	assert.False(t, p.mayDescend(".git"))
	assert.False(t, p.mayDescend("a/.cache"))

	p, err = compilePattern("{*.go,.cache/x}")
	require.NoError(t, err)
	assert.True(t, p.mayDescend(".git/deep"), "a base-name alternative searches everywhere")
}

func FuzzMatchPath(f *testing.F) {
	for _, seed := range [][2]string{
		{"*.py", "src/a.py"}, {"**/*.go", "a/b/c.go"}, {"{a,b{c,d}}", "bd"}, {"[!a-c]?", "x/dy"},
		{"/src/**", "src/.x"}, {"a/../b", "b"}, {"{{,}", "{"}, {"[", "["}, {".*", ".env"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, rel string) {
		ok, err := MatchPath(pattern, rel)
		if err != nil {
			require.False(t, ok)
			require.True(t, errors.Is(err, ErrInvalidPattern) || errors.Is(err, ErrPatternTooBroad), err)
			return
		}
		p, err := compilePattern(pattern)
		require.NoError(t, err)
		rel = strings.TrimLeft(rel, "/")
		if ok { // pruning must never hide a match
			for i := range rel {
				if rel[i] == '/' && i > 0 {
					require.True(t, p.mayDescend(rel[:i]), "pattern %q rel %q dir %q", pattern, rel, rel[:i])
				}
			}
		}
		if pattern != ".." && !strings.ContainsAny(pattern, "*?[{}/") {
			for _, r := range []string{pattern, "d/" + pattern, ".d/" + pattern} {
				ok, err := MatchPath(pattern, r)
				require.NoError(t, err)
				require.True(t, ok, "literal %q must match %q", pattern, r)
			}
		}
	})
}
