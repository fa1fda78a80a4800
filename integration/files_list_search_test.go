package integration

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilesLs(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		t.Run("Listing", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{
				"b.txt":       "bb",
				"a.txt":       "a",
				".hidden":     "hidden!",
				"sub/deeper":  "not listed",
				"Z_upper.txt": "",
			})
			mustSh(t, sb, "cd "+shellQuote(dir)+" && ln -s sub link && mkdir emptydir")

			infos, err := sb.Ls(testCtx(t), dir)
			require.NoError(t, err)
			type entry struct {
				name  string
				isDir bool
				size  int64
			}
			var got []entry
			for _, fi := range infos {
				require.True(t, strings.HasPrefix(fi.Path, dir+"/"), "absolute path: %q", fi.Path)
				name := strings.TrimPrefix(fi.Path, dir+"/")
				size := fi.Size
				if fi.IsDir || name == "link" {
					size = -1 // directory and link sizes depend on the filesystem
				}
				got = append(got, entry{name, fi.IsDir, size})
				assert.False(t, fi.ModTime.IsZero(), "%s has a mtime", name)
				assert.True(t, fi.ModTime.After(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), "%s mtime %v", name, fi.ModTime)
			}
			assert.Equal(t, []entry{
				{".hidden", false, 7},
				{"Z_upper.txt", false, 0},
				{"a.txt", false, 1},
				{"b.txt", false, 2},
				{"emptydir", true, -1},
				{"link", false, -1}, // a symlink to a directory is not a directory
				{"sub", true, -1},
			}, got)
			for _, fi := range infos {
				switch strings.TrimPrefix(fi.Path, dir+"/") {
				case "a.txt":
					assert.True(t, fi.Mode.IsRegular(), "mode %v", fi.Mode)
				case "sub":
					assert.True(t, fi.Mode.IsDir(), "mode %v", fi.Mode)
				}
			}
		})

		t.Run("EmptyDir", func(t *testing.T) {
			dir := testDir(t)
			mustSh(t, sb, "mkdir -p "+shellQuote(dir))
			infos, err := sb.Ls(testCtx(t), dir)
			require.NoError(t, err)
			assert.Empty(t, infos)
		})

		t.Run("TrailingSlash", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/f", "x")
			assert.Equal(t, []string{dir + "/f"}, lsPaths(t, sb, dir+"/"))
		})

		t.Run("Root", func(t *testing.T) {
			assert.Contains(t, lsPaths(t, sb, "/"), "/workspace")
		})

		t.Run("Missing", func(t *testing.T) {
			p := testDir(t) + "/missing"
			_, err := sb.Ls(testCtx(t), p)
			require.ErrorIs(t, err, fs.ErrNotExist)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, p, pe.Path)
		})

		t.Run("File", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "x")
			_, err := sb.Ls(testCtx(t), p)
			require.ErrorIs(t, err, sandbox.ErrNotDir)
		})
	})
}

func TestFilesGlob(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		dir := testDir(t)
		writeTree(t, sb, dir, globTree)
		mustSh(t, sb, "cd "+shellQuote(dir)+" && mkdir -p emptydir/sub.go && ln -s pkg pkglink")

		cases := []struct {
			pattern string
			want    []string // relative to dir, sorted
		}{
			// Without "/": the base name, at any depth, hidden directories included.
			{"*.go", []string{".hidden/secret.go", "main.go", "pkg/deep/x.go", "pkg/util.go", "pkg/util_test.go"}},
			{"x.*", []string{"pkg/deep/x.go", "pkg/deep/x.txt"}},
			{"*", []string{".hidden/notes.md", ".hidden/secret.go", "README.md", "docs/guide.md", "main.go",
				"pkg/deep/x.go", "pkg/deep/x.txt", "pkg/util.go", "pkg/util_test.go"}},
			// With "/": the relative path; "**" never enters hidden directories.
			{"**/*.go", []string{"main.go", "pkg/deep/x.go", "pkg/util.go", "pkg/util_test.go"}},
			{"pkg/*.go", []string{"pkg/util.go", "pkg/util_test.go"}},
			{"pkg/**", []string{"pkg/deep/x.go", "pkg/deep/x.txt", "pkg/util.go", "pkg/util_test.go"}},
			{"/pkg/deep/*", []string{"pkg/deep/x.go", "pkg/deep/x.txt"}},
			{".hidden/*.go", []string{".hidden/secret.go"}},
			// Braces.
			{"*.{md,txt}", []string{".hidden/notes.md", "README.md", "docs/guide.md", "pkg/deep/x.txt"}},
			{"{main,pkg/util}.go", []string{"main.go", "pkg/util.go"}},
			// Dot-files only when the pattern names a dot.
			{".*", []string{".env"}},
			{".env", []string{".env"}},
			{"*env", nil},
			{"[!m]*.go", []string{".hidden/secret.go", "pkg/deep/x.go", "pkg/util.go", "pkg/util_test.go"}},
			{"[^m]*.go", []string{".hidden/secret.go", "pkg/deep/x.go", "pkg/util.go", "pkg/util_test.go"}},
			{"nothing*", nil},
		}
		for _, tc := range cases {
			t.Run(tc.pattern, func(t *testing.T) {
				res, err := sb.Glob(testCtx(t), tc.pattern, dir)
				require.NoError(t, err)
				assert.False(t, res.Truncated)
				var got []string
				for _, m := range res.Matches {
					assert.False(t, m.IsDir, "%s", m.Path)
					got = append(got, m.Path)
				}
				assert.True(t, slices.IsSorted(got), "sorted: %q", got)
				assert.Equal(t, absAll(dir, tc.want...), nonNil(got))
			})
		}

		t.Run("FileInfo", func(t *testing.T) {
			res, err := sb.Glob(testCtx(t), "main.go", dir)
			require.NoError(t, err)
			require.Len(t, res.Matches, 1)
			m := res.Matches[0]
			assert.Equal(t, dir+"/main.go", m.Path)
			assert.Equal(t, int64(len(globTree["main.go"])), m.Size)
			assert.False(t, m.ModTime.IsZero())
		})

		t.Run("InvalidPattern", func(t *testing.T) {
			for _, pattern := range []string{"..", "../*", "pkg/../*.go", "**/../x"} {
				_, err := sb.Glob(testCtx(t), pattern, dir)
				assert.ErrorIs(t, err, sandbox.ErrInvalidPattern, "pattern %q", pattern)
			}
		})

		t.Run("Missing", func(t *testing.T) {
			_, err := sb.Glob(testCtx(t), "*", dir+"/missing")
			require.ErrorIs(t, err, fs.ErrNotExist)
		})

		t.Run("RootIsFile", func(t *testing.T) {
			_, err := sb.Glob(testCtx(t), "*", dir+"/main.go")
			require.ErrorIs(t, err, sandbox.ErrNotDir)
		})

		t.Run("DefaultPathIsWorkingDir", func(t *testing.T) {
			// "" searches the working directory, as Grep does; a relative
			// path resolves against it.
			name := "glob-" + strings.ReplaceAll(t.Name(), "/", "-") + "-unique.txt"
			p := testDir(t) + "/" + name
			mustWrite(t, sb, p, "x")
			for _, root := range []string{"", ".", sb.WorkingDir()} {
				res, err := sb.Glob(testCtx(t), name, root)
				require.NoError(t, err, "root %q", root)
				require.Len(t, res.Matches, 1, "root %q", root)
				assert.Equal(t, p, res.Matches[0].Path, "root %q", root)
			}
			res, err := sb.Glob(testCtx(t), name, "/etc")
			require.NoError(t, err)
			assert.Empty(t, res.Matches, "another root")
		})
	})
}

func TestFilesGrep(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		dir := testDir(t)
		writeTree(t, sb, dir, map[string]string{
			"a.txt":         "foo a.*b( bar\nplain aXXb(\nfoo again\n",
			"sub/b.go":      "foo in go\n",
			"sub/deep/c.go": "nothing\nfoo deep\n",
			".hidden.txt":   "foo hidden\n",
			"bin.dat":       "foo\x00\xff\xfe binary foo\n",
		})

		type match struct {
			path string // relative to dir
			line int
			text string
		}
		grep := func(t *testing.T, pattern, path string, opts ...sandbox.GrepOption) ([]match, bool) {
			t.Helper()
			res, err := sb.Grep(testCtx(t), pattern, path, opts...)
			require.NoError(t, err)
			var out []match
			for _, m := range res.Matches {
				require.True(t, strings.HasPrefix(m.Path, dir+"/"), "absolute path: %q", m.Path)
				out = append(out, match{strings.TrimPrefix(m.Path, dir+"/"), m.Line, m.Text})
			}
			return out, res.Truncated
		}
		allFoo := []match{
			{".hidden.txt", 1, "foo hidden"},
			{"a.txt", 1, "foo a.*b( bar"},
			{"a.txt", 3, "foo again"},
			{"sub/b.go", 1, "foo in go"},
			{"sub/deep/c.go", 2, "foo deep"},
		}

		cases := []struct {
			name    string
			pattern string
			path    string
			opts    []sandbox.GrepOption
			want    []match
		}{
			{"all_hidden_included_binary_skipped", "foo", dir, nil, allFoo},
			{"literal_metachars", "a.*b(", dir, nil, []match{{"a.txt", 1, "foo a.*b( bar"}}},
			{"case_sensitive", "FOO", dir, nil, nil},
			{"glob_basename", "foo", dir, []sandbox.GrepOption{sandbox.GrepGlob("*.go")},
				[]match{{"sub/b.go", 1, "foo in go"}, {"sub/deep/c.go", 2, "foo deep"}}},
			{"glob_with_slash", "foo", dir, []sandbox.GrepOption{sandbox.GrepGlob("sub/*.go")},
				[]match{{"sub/b.go", 1, "foo in go"}}},
			{"glob_double_star", "foo", dir, []sandbox.GrepOption{sandbox.GrepGlob("**/*.go")},
				[]match{{"sub/b.go", 1, "foo in go"}, {"sub/deep/c.go", 2, "foo deep"}}},
			{"glob_braces", "foo", dir, []sandbox.GrepOption{sandbox.GrepGlob("{a,b}.*")},
				[]match{{"a.txt", 1, "foo a.*b( bar"}, {"a.txt", 3, "foo again"}, {"sub/b.go", 1, "foo in go"}}},
			{"single_file", "foo", dir + "/a.txt", nil,
				[]match{{"a.txt", 1, "foo a.*b( bar"}, {"a.txt", 3, "foo again"}}},
			{"subdir", "foo", dir + "/sub/deep", nil, []match{{"sub/deep/c.go", 2, "foo deep"}}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				got, truncated := grep(t, tc.pattern, tc.path, tc.opts...)
				assert.False(t, truncated)
				assert.Equal(t, tc.want, got)
			})
		}

		t.Run("LongLines", func(t *testing.T) {
			// Matches across the helper's 64 KiB read windows, and a match at
			// the end of a line longer than the 64 KiB kept of its text.
			p := testDir(t) + "/long.txt"
			across := strings.Repeat("x", 65533) + "needle"
			long := strings.Repeat("y", 100000) + "needle"
			mustWrite(t, sb, p, across+"\n"+long+"\n")
			res, err := sb.Grep(testCtx(t), "needle", p)
			require.NoError(t, err)
			require.Len(t, res.Matches, 2)
			assert.Equal(t, 1, res.Matches[0].Line)
			assert.True(t, res.Matches[0].Text == across[:64<<10], "the first 64 KiB of the line (len %d)", len(res.Matches[0].Text))
			assert.Equal(t, 2, res.Matches[1].Line)
			assert.Equal(t, 64<<10, len(res.Matches[1].Text))
			assert.True(t, strings.HasPrefix(long, res.Matches[1].Text))
		})

		t.Run("CRLF", func(t *testing.T) {
			p := testDir(t) + "/crlf.txt"
			mustWrite(t, sb, p, "one foo\r\ntwo\r\nthree foo\r\n")
			res, err := sb.Grep(testCtx(t), "foo", p)
			require.NoError(t, err)
			assert.Equal(t, []sandbox.GrepMatch{{Path: p, Line: 1, Text: "one foo"}, {Path: p, Line: 3, Text: "three foo"}}, res.Matches)
		})

		t.Run("InvalidPattern", func(t *testing.T) {
			_, err := sb.Grep(testCtx(t), "", dir)
			assert.ErrorIs(t, err, sandbox.ErrInvalidPattern)
			_, err = sb.Grep(testCtx(t), "foo", dir, sandbox.GrepGlob("../*"))
			assert.ErrorIs(t, err, sandbox.ErrInvalidPattern)
		})

		t.Run("MaxCount", func(t *testing.T) {
			got, truncated := grep(t, "foo", dir, sandbox.GrepMaxCount(2))
			assert.True(t, truncated)
			assert.Equal(t, allFoo[:2], got)

			got, truncated = grep(t, "foo", dir, sandbox.GrepMaxCount(len(allFoo)))
			assert.False(t, truncated, "exactly max count matches is not truncated")
			assert.Equal(t, allFoo, got)

			_, err := sb.Grep(testCtx(t), "foo", dir, sandbox.GrepMaxCount(0))
			assert.Error(t, err)
		})

		t.Run("DefaultPathIsWorkingDir", func(t *testing.T) {
			token := "token-" + strings.ReplaceAll(t.Name(), "/", "-") + "-unique"
			p := testDir(t) + "/g.txt"
			mustWrite(t, sb, p, "before\n"+token+"\n")
			res, err := sb.Grep(testCtx(t), token, "")
			require.NoError(t, err)
			assert.Equal(t, []sandbox.GrepMatch{{Path: p, Line: 2, Text: token}}, res.Matches)
		})

		t.Run("Missing", func(t *testing.T) {
			_, err := sb.Grep(testCtx(t), "foo", dir+"/missing")
			require.ErrorIs(t, err, fs.ErrNotExist)
		})
	})
}

// nonNil turns a nil slice into an empty one, so that "no matches" compares
// equal whatever its representation.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
