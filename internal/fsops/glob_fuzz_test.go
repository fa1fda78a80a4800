package fsops

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// globLinkTargets are the regular files that the links of globTree resolve
// to (fs.FS names); its other links lead nowhere, to a directory or in a loop.
var globLinkTargets = map[string]string{
	"ws/links/ok.py":    "ws/src/b.py",
	"ws/links/abs.py":   "ws/src/c.go",
	"ws/links/out.py":   "outside.py",
	"ws/links/chain.py": "ws/src/b.py",
}

// refGlob lists, in walk order (depth-first, lexical), the root-relative
// paths below root (an fs.FS name) that Glob may return: regular files and
// links to regular files inside root, not under /proc, /sys or /dev when
// root is ".", matching pattern per MatchPath.
func refGlob(t *testing.T, fsys fstest.MapFS, root, pattern string) []string {
	var out []string
	err := fs.WalkDir(fsys, root, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if root == "." && virtualDirs[rel] {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			target, ok := globLinkTargets[rel]
			if !ok || !within(target, root) {
				return nil
			}
		}
		sub := subPath(root, rel)
		ok, err := MatchPath(pattern, sub)
		if err != nil {
			t.Fatalf("MatchPath(%q, %q): %v", pattern, sub, err)
		}
		if ok {
			out = append(out, absPath(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reference walk: %v", err)
	}
	return out
}

// FuzzGlob globs globTree, with two files of fuzzed names added, from
// several roots with a fuzzed pattern and match limit, and checks the result
// against refGlob: the same files (regular files only, links resolved),
// sorted, cut at the limit in walk order.
func FuzzGlob(f *testing.F) {
	for _, p := range []string{
		"*.py", "/*.py", "**/*.py", "src/**", ".*", ".git/**", "*.{md,go}", "{src/{b,d}.py,*.md}",
		"[!a]*.py", "/deep/*", "ws/links/*", "**", "*", "**/.*/*", "a/**/b", "[]]", "f/[^.]*", "{,}",
		"src/", "..", "a/../b", "**/**/*.py", "*/*", "/", "x{a,b}{c,d}{e,f}",
	} {
		f.Add(p, uint8(1), uint8(0), "n.py", "sub/.n.py")
	}
	f.Add("*.py", uint8(0), uint8(3), "é.py", "a/b/c.py")
	f.Add("f/**/[[]x", uint8(4), uint8(0), "[x", "d/[x")
	f.Add("*", uint8(2), uint8(1), ".x", "y")
	f.Fuzz(func(t *testing.T, pattern string, rootSel, maxMatches uint8, name1, name2 string) {
		fsys := globTree()
		fsys["ws/f/keep"] = file("k")
		var added []string
		for _, name := range []string{name1, name2} {
			rel := "ws/f/" + name
			if !fs.ValidPath(rel) {
				continue
			}
			// A file must not also be the parent directory of another.
			clash := false
			for p := range fsys {
				if p == rel || strings.HasPrefix(p, rel+"/") || strings.HasPrefix(rel, p+"/") {
					clash = true
				}
			}
			if !clash {
				fsys[rel] = file(name)
				added = append(added, rel)
			}
		}
		roots := []string{"/", "/ws", "/ws/src", "/ws/links", "/ws/f"}
		root := roots[int(rootSel)%len(roots)]

		res, err := Glob(context.Background(), fsys, root, pattern, GlobOptions{MaxMatches: int(maxMatches)})
		if _, cerr := compilePattern(pattern); cerr != nil {
			if err == nil || !(errors.Is(err, ErrInvalidPattern) || errors.Is(err, ErrPatternTooBroad)) {
				t.Fatalf("Glob(%q): %v, want %v", pattern, err, cerr)
			}
			return
		}
		if err != nil {
			t.Fatalf("Glob(%q, %q): %v", root, pattern, err)
		}

		rootRel, err := fsPath("glob", root)
		if err != nil {
			t.Fatal(err)
		}
		want := refGlob(t, fsys, rootRel, pattern)
		wantTrunc := false
		if maxMatches > 0 && len(want) > int(maxMatches) {
			want, wantTrunc = want[:maxMatches], true
		}
		slices.Sort(want)
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Path)
			if m.IsDir || !m.Mode.IsRegular() {
				t.Fatalf("Glob(%q, %q): %s is not a regular file: %v", root, pattern, m.Path, m.Mode)
			}
		}
		if !slices.IsSorted(got) {
			t.Fatalf("Glob(%q, %q): unsorted %q", root, pattern, got)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Glob(%q, %q) with files %q: got %q, want %q", root, pattern, added, got, want)
		}
		if res.Truncated != wantTrunc {
			t.Fatalf("Glob(%q, %q): Truncated %v, want %v", root, pattern, res.Truncated, wantTrunc)
		}
	})
}
