package sandbox_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Integration tests of Write, Read, Edit, Ls, Glob, Grep and Delete against
// the real daemon, on every test image.

// allBytes is every byte value, a few times over: not text in any sense.
var allBytes = func() []byte {
	b := make([]byte, 0, 1024)
	for i := 0; i < 1024; i++ {
		b = append(b, byte(255-i%256))
	}
	return b
}()

func TestFilesWrite(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
		t.Run("RoundTrip", func(t *testing.T) {
			dir := testDir(t)
			cases := []struct {
				name    string
				content string
				read    string // what Read returns
				lines   int
			}{
				{"plain", "hello\nworld\n", "hello\nworld", 2},
				{"no_trailing_newline", "hello\nworld", "hello\nworld", 2},
				{"single_line", "x", "x", 1},
				{"crlf", "one\r\ntwo\r\n", "one\ntwo", 2},
				{"lone_cr", "one\rtwo\rthree", "one\ntwo\nthree", 3},
				{"mixed_line_ends", "a\r\nb\rc\nd", "a\nb\nc\nd", 4},
				{"blank_lines", "\n\nx\n", "\n\nx", 3},
				{"unicode", "données ✓\n文件 🎉\n", "données ✓\n文件 🎉", 2},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := dir + "/" + tc.name + ".txt"
					require.NoError(t, sb.Write(testCtx(t), p, []byte(tc.content)))
					assert.Equal(t, []byte(tc.content), download(t, sb, p), "bytes in the sandbox")

					res, err := sb.Read(testCtx(t), p)
					require.NoError(t, err)
					assert.Equal(t, sandbox.ReadResult{
						Content: tc.read, Encoding: "utf-8", TotalLines: tc.lines,
						StartLine: 1, EndLine: tc.lines, NextOffset: -1,
					}, res)
				})
			}
		})

		t.Run("BinaryRoundTrip", func(t *testing.T) {
			p := testDir(t) + "/all.bin"
			require.NoError(t, sb.Write(testCtx(t), p, allBytes))
			assert.Equal(t, allBytes, download(t, sb, p))
		})

		t.Run("CreatesParents", func(t *testing.T) {
			dir := testDir(t)
			p := dir + "/a/b/c/file.txt"
			mustWrite(t, sb, p, "deep")
			assert.Equal(t, []string{p}, lsPaths(t, sb, dir+"/a/b/c"))
			infos, err := sb.Ls(testCtx(t), dir+"/a")
			require.NoError(t, err)
			require.Len(t, infos, 1)
			assert.True(t, infos[0].IsDir)
		})

		t.Run("Overwrites", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "a much longer first version\nwith two lines\n")
			mustWrite(t, sb, p, "short")
			assert.Equal(t, []byte("short"), download(t, sb, p))
		})

		t.Run("EmptyContent", func(t *testing.T) {
			p := testDir(t) + "/empty.txt"
			require.NoError(t, sb.Write(testCtx(t), p, nil))
			assert.Equal(t, "0", mustSh(t, sb, "wc -c < "+shellQuote(p)+" | tr -d ' '"))
		})

		t.Run("OntoDirectory", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/sub/keep.txt", "keep")
			err := sb.Write(testCtx(t), dir+"/sub", []byte("x"))
			require.ErrorIs(t, err, sandbox.ErrIsDir)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, dir+"/sub", pe.Path)
			assert.Equal(t, []string{dir + "/sub/keep.txt"}, lsPaths(t, sb, dir+"/sub"), "the directory is intact")
		})

		t.Run("ParentIsFile", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/file.txt", "x")
			err := sb.Write(testCtx(t), dir+"/file.txt/child.txt", []byte("y"))
			require.ErrorIs(t, err, sandbox.ErrNotDir)
			assert.Equal(t, []byte("x"), download(t, sb, dir+"/file.txt"))
		})

		t.Run("ThroughSymlink", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/target.txt", "old")
			mustSh(t, sb, "ln -s target.txt "+shellQuote(dir+"/link.txt"))
			mustWrite(t, sb, dir+"/link.txt", "new")
			assert.Equal(t, []byte("new"), download(t, sb, dir+"/target.txt"))
			assert.Equal(t, "target.txt", mustSh(t, sb, "readlink "+shellQuote(dir+"/link.txt")), "the link is still a link")
		})
	})
}

func TestFilesRead(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
		t.Run("Pagination", func(t *testing.T) {
			p := testDir(t) + "/ten.txt"
			var b strings.Builder
			for i := 1; i <= 10; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			mustWrite(t, sb, p, b.String())
			lines := func(from, to int) string {
				var out []string
				for i := from; i <= to; i++ {
					out = append(out, fmt.Sprintf("line %d", i))
				}
				return strings.Join(out, "\n")
			}
			cases := []struct {
				name             string
				opts             []sandbox.ReadOption
				content          string
				start, end, next int
			}{
				{"default", nil, lines(1, 10), 1, 10, -1},
				{"limit", []sandbox.ReadOption{sandbox.Limit(3)}, lines(1, 3), 1, 3, 3},
				{"offset_limit", []sandbox.ReadOption{sandbox.Offset(2), sandbox.Limit(3)}, lines(3, 5), 3, 5, 5},
				{"last_page_short", []sandbox.ReadOption{sandbox.Offset(7), sandbox.Limit(5)}, lines(8, 10), 8, 10, -1},
				{"last_page_exact", []sandbox.ReadOption{sandbox.Offset(7), sandbox.Limit(3)}, lines(8, 10), 8, 10, -1},
				{"last_line", []sandbox.ReadOption{sandbox.Offset(9)}, lines(10, 10), 10, 10, -1},
				{"one_line", []sandbox.ReadOption{sandbox.Offset(4), sandbox.Limit(1)}, lines(5, 5), 5, 5, 5},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					res, err := sb.Read(testCtx(t), p, tc.opts...)
					require.NoError(t, err)
					assert.Equal(t, sandbox.ReadResult{
						Content: tc.content, Encoding: "utf-8", TotalLines: 10,
						StartLine: tc.start, EndLine: tc.end, NextOffset: tc.next,
					}, res)
				})
			}
		})

		t.Run("OffsetPastEnd", func(t *testing.T) {
			p := testDir(t) + "/three.txt"
			mustWrite(t, sb, p, "a\nb\nc\n")
			for _, offset := range []int{3, 4, 100} {
				_, err := sb.Read(testCtx(t), p, sandbox.Offset(offset))
				require.ErrorIs(t, err, sandbox.ErrOffsetOutOfRange, "offset %d", offset)
				assert.Contains(t, err.Error(), fmt.Sprintf("Line offset %d exceeds file length (3 lines)", offset))
			}
		})

		t.Run("NegativeOptions", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "a\n")
			_, err := sb.Read(testCtx(t), p, sandbox.Offset(-1))
			assert.Error(t, err)
			_, err = sb.Read(testCtx(t), p, sandbox.Limit(-1))
			assert.Error(t, err)
		})

		t.Run("LimitZero", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "a\nb\n")
			res, err := sb.Read(testCtx(t), p, sandbox.Limit(0))
			require.NoError(t, err)
			assert.True(t, res.NoLinesRequested)
			assert.Equal(t, "", res.Content)
			assert.Equal(t, "utf-8", res.Encoding)
		})

		t.Run("EmptyFile", func(t *testing.T) {
			p := testDir(t) + "/empty.txt"
			mustWrite(t, sb, p, "")
			// The reminder wins over the offset and the limit.
			for _, opts := range [][]sandbox.ReadOption{nil, {sandbox.Limit(0)}, {sandbox.Offset(5)}} {
				res, err := sb.Read(testCtx(t), p, opts...)
				require.NoError(t, err)
				assert.Equal(t, "System reminder: File exists but has empty contents", res.Content)
				assert.Equal(t, "utf-8", res.Encoding)
			}
		})

		t.Run("Base64", func(t *testing.T) {
			dir := testDir(t)
			png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), allBytes[:64]...)
			cases := []struct {
				name    string
				content []byte
			}{
				{"binary.dat", allBytes},
				{"nul_and_invalid.txt", []byte("text\x00more\xff\xfe\n")},
				{"image.png", png},
				{"text_in.png", []byte("not really an image\n")}, // by extension
				{"UPPER.PNG", []byte("upper case extension\n")},
				{"doc.pdf", []byte("%PDF-1.4\n")},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := dir + "/" + tc.name
					require.NoError(t, sb.Write(testCtx(t), p, tc.content))
					// Offset and limit do not apply to a whole-file read.
					res, err := sb.Read(testCtx(t), p, sandbox.Offset(1), sandbox.Limit(1))
					require.NoError(t, err)
					assert.Equal(t, "base64", res.Encoding)
					got, err := base64.StdEncoding.DecodeString(res.Content)
					require.NoError(t, err)
					assert.Equal(t, tc.content, got)
				})
			}
		})

		t.Run("NULIsText", func(t *testing.T) {
			// deepagents sniffs with a UTF-8 decoder, which accepts NUL: a
			// file with NUL bytes that is otherwise valid UTF-8 is text.
			p := testDir(t) + "/nul.txt"
			mustWrite(t, sb, p, "a\x00b\nc\n")
			res, err := sb.Read(testCtx(t), p)
			require.NoError(t, err)
			assert.Equal(t, "utf-8", res.Encoding)
			assert.Equal(t, "a\x00b\nc", res.Content)
		})

		t.Run("BinaryTooLarge", func(t *testing.T) {
			dir := testDir(t)
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && cd "+shellQuote(dir)+
				" && head -c 600000 /dev/urandom > big.png && head -c 600000 /dev/urandom > big.bin")
			for _, name := range []string{"big.png", "big.bin"} {
				_, err := sb.Read(testCtx(t), dir+"/"+name)
				require.ErrorIs(t, err, sandbox.ErrBinaryTooLarge, name)
				assert.Contains(t, err.Error(), "Binary file exceeds maximum preview size of 512000 bytes")
			}
		})

		t.Run("HugeLine", func(t *testing.T) {
			// One 50 MiB line, then a short one: the first page is a bounded,
			// truncated part of the huge line, and the next line is reachable.
			dir := testDir(t)
			p := dir + "/huge.txt"
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && head -c 52428800 /dev/zero | tr '\\0' x > "+shellQuote(p)+
				" && echo >> "+shellQuote(p)+" && echo second >> "+shellQuote(p))

			res, err := sb.Read(testCtx(t), p)
			require.NoError(t, err)
			assert.True(t, res.Truncated)
			assert.LessOrEqual(t, len(res.Content), 512000)
			assert.Greater(t, len(res.Content), 400000)
			assert.True(t, strings.HasPrefix(res.Content, strings.Repeat("x", 1000)))
			assert.Contains(t, res.Content, "[Output was truncated due to size limits.")
			assert.Equal(t, "utf-8", res.Encoding)
			assert.Equal(t, 1, res.StartLine)
			assert.Equal(t, 1, res.EndLine)
			assert.Equal(t, 1, res.NextOffset)

			res, err = sb.Read(testCtx(t), p, sandbox.Offset(res.NextOffset))
			require.NoError(t, err)
			assert.False(t, res.Truncated)
			assert.Equal(t, "second", res.Content)
			assert.Equal(t, 2, res.StartLine)
			assert.Equal(t, 2, res.EndLine)
			assert.Equal(t, 2, res.TotalLines)
			assert.Equal(t, -1, res.NextOffset)
		})

		t.Run("LineEndsAtBufferBoundaries", func(t *testing.T) {
			// The helper reads in 64 KiB windows: line ends that straddle a
			// window edge still count once.
			dir := testDir(t)
			cases := []struct {
				name    string
				content string
				want    string
				lines   int
			}{
				{"crlf_split", strings.Repeat("a", 65535) + "\r\nb", strings.Repeat("a", 65535) + "\nb", 2},
				{"cr_at_edge", strings.Repeat("a", 65535) + "\rb", strings.Repeat("a", 65535) + "\nb", 2},
				{"crlf_after_edge", strings.Repeat("a", 65536) + "\r\nb\r\n", strings.Repeat("a", 65536) + "\nb", 2},
				{"trailing_cr", "a\r", "a", 1},
				{"utf8_split", strings.Repeat("a", 65535) + "é\nb", strings.Repeat("a", 65535) + "é\nb", 2},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := dir + "/" + tc.name
					mustWrite(t, sb, p, tc.content)
					res, err := sb.Read(testCtx(t), p)
					require.NoError(t, err)
					assert.Equal(t, "utf-8", res.Encoding)
					assert.True(t, res.Content == tc.want, "content differs (len %d, want %d)", len(res.Content), len(tc.want))
					assert.Equal(t, tc.lines, res.TotalLines)
				})
			}
		})

		t.Run("TruncationKeepsUTF8", func(t *testing.T) {
			// A 900 KB line of 3-byte characters is cut on a character boundary.
			p := testDir(t) + "/cjk.txt"
			mustWrite(t, sb, p, strings.Repeat("文", 300000)+"\n")
			res, err := sb.Read(testCtx(t), p)
			require.NoError(t, err)
			assert.True(t, res.Truncated)
			assert.LessOrEqual(t, len(res.Content), 512000)
			assert.True(t, utf8.ValidString(res.Content), "valid UTF-8")
			assert.True(t, strings.HasPrefix(res.Content, "文文文"))
		})

		t.Run("TotalLinesOfLargeFile", func(t *testing.T) {
			// Over 1 MiB, a page that stops early does not count the rest.
			dir := testDir(t)
			p := dir + "/seq.txt"
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && seq 1 300000 > "+shellQuote(p))
			res, err := sb.Read(testCtx(t), p, sandbox.Limit(2))
			require.NoError(t, err)
			assert.Equal(t, "1\n2", res.Content)
			assert.Equal(t, -1, res.TotalLines)
			assert.Equal(t, 2, res.NextOffset)

			res, err = sb.Read(testCtx(t), p, sandbox.Offset(299998))
			require.NoError(t, err)
			assert.Equal(t, "299999\n300000", res.Content)
			assert.Equal(t, 300000, res.TotalLines)
			assert.Equal(t, 300000, res.EndLine)
			assert.Equal(t, -1, res.NextOffset)
		})

		t.Run("Missing", func(t *testing.T) {
			p := testDir(t) + "/missing.txt"
			_, err := sb.Read(testCtx(t), p)
			require.ErrorIs(t, err, fs.ErrNotExist)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, p, pe.Path)
		})

		t.Run("Directory", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/f.txt", "x")
			_, err := sb.Read(testCtx(t), dir)
			require.ErrorIs(t, err, sandbox.ErrIsDir)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, dir, pe.Path)
		})

		t.Run("FIFO", func(t *testing.T) {
			dir := testDir(t)
			mustSh(t, sb, "mkdir -p "+shellQuote(dir)+" && mkfifo "+shellQuote(dir+"/fifo"))
			_, err := sb.Read(testCtx(t), dir+"/fifo")
			require.ErrorIs(t, err, sandbox.ErrNotRegular)
		})
	})
}

func TestFilesEdit(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
		t.Run("Cases", func(t *testing.T) {
			dir := testDir(t)
			cases := []struct {
				name       string
				content    string
				old, new   string
				replaceAll bool
				count      int
				err        error
				want       string // content afterwards (unchanged on error)
			}{
				{"single", "hello world\n", "world", "there", false, 1, nil, "hello there\n"},
				{"replace_all", "a-a-a", "a", "b", true, 3, nil, "b-b-b"},
				{"replace_all_once", "x y", "x", "z", true, 1, nil, "z y"},
				{"delete_text", "keep drop keep", " drop", "", false, 1, nil, "keep keep"},
				{"same_text", "same", "same", "same", false, 1, nil, "same"},
				{"literal_metachars", "a.*b( and aXb(", "a.*b(", "lit", false, 1, nil, "lit and aXb("},
				{"unicode", "données ✓\n", "✓", "✔", false, 1, nil, "données ✔\n"},
				{"crlf_file_lf_text", "one\r\ntwo\r\nthree\r\n", "one\ntwo", "1\n2", false, 1, nil, "1\r\n2\r\nthree\r\n"},
				{"crlf_file_replace_all", "x\r\ny\r\nx\r\ny\r\n", "x\ny", "z\nz", true, 2, nil, "z\r\nz\r\nz\r\nz\r\n"},
				{"lf_file_crlf_text", "one\ntwo\n", "one\r\ntwo", "1\r\n2", false, 1, nil, "1\n2\n"},
				{"not_found", "abc", "zzz", "y", false, 0, sandbox.ErrStringNotFound, "abc"},
				{"not_found_replace_all", "abc", "zzz", "y", true, 0, sandbox.ErrStringNotFound, "abc"},
				{"multiple", "a-a", "a", "b", false, 0, sandbox.ErrMultipleOccurrences, "a-a"},
				{"not_text", "\xff\xfeabc", "abc", "y", false, 0, sandbox.ErrNotText, "\xff\xfeabc"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := dir + "/" + tc.name + ".txt"
					mustWrite(t, sb, p, tc.content)
					n, err := sb.Edit(testCtx(t), p, tc.old, tc.new, tc.replaceAll)
					if tc.err != nil {
						require.ErrorIs(t, err, tc.err)
						var pe *fs.PathError
						require.ErrorAs(t, err, &pe)
						assert.Equal(t, p, pe.Path)
					} else {
						require.NoError(t, err)
						assert.Equal(t, tc.count, n)
					}
					assert.Equal(t, []byte(tc.want), download(t, sb, p))
				})
			}
		})

		t.Run("Missing", func(t *testing.T) {
			_, err := sb.Edit(testCtx(t), testDir(t)+"/missing.txt", "a", "b", false)
			require.ErrorIs(t, err, fs.ErrNotExist)
		})

		t.Run("Directory", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/f.txt", "a")
			_, err := sb.Edit(testCtx(t), dir, "a", "b", false)
			require.Error(t, err)
			assert.True(t, errors.Is(err, sandbox.ErrIsDir) || errors.Is(err, sandbox.ErrNotRegular), "got %v", err)
		})

		t.Run("KeepsModeAndOwner", func(t *testing.T) {
			p := testDir(t) + "/script.sh"
			mustWrite(t, sb, p, "#!/bin/sh\necho old\n")
			owner := "1000:1000"
			if uid := mustSh(t, sb, "id -u"); uid == "0" {
				mustSh(t, sb, "chmod 755 "+shellQuote(p)+" && chown 1000:1000 "+shellQuote(p))
			} else { // only root may chown: the file stays the user's
				owner = uid + ":" + mustSh(t, sb, "id -g")
				mustSh(t, sb, "chmod 755 "+shellQuote(p))
			}
			n, err := sb.Edit(testCtx(t), p, "old", "new", false)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, "755 "+owner, mustSh(t, sb, "stat -c '%a %u:%g' "+shellQuote(p)))
			assert.Equal(t, "new", mustSh(t, sb, shellQuote(p)))
		})

		t.Run("ThroughSymlink", func(t *testing.T) {
			dir := testDir(t)
			mustWrite(t, sb, dir+"/target.txt", "old text")
			mustSh(t, sb, "ln -s target.txt "+shellQuote(dir+"/link.txt"))
			n, err := sb.Edit(testCtx(t), dir+"/link.txt", "old", "new", false)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, []byte("new text"), download(t, sb, dir+"/target.txt"))
			assert.Equal(t, "target.txt", mustSh(t, sb, "readlink "+shellQuote(dir+"/link.txt")))
		})
	})
}

func TestFilesLs(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
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

// globTree is the file tree of the glob and grep tests.
var globTree = map[string]string{
	"main.go":           "package main // foo\n",
	"README.md":         "# foo\n",
	"pkg/util.go":       "package pkg\n",
	"pkg/util_test.go":  "package pkg\n",
	"pkg/deep/x.go":     "package deep\n",
	"pkg/deep/x.txt":    "x\n",
	"docs/guide.md":     "guide\n",
	".env":              "SECRET=1\n",
	".hidden/secret.go": "package hidden\n",
	".hidden/notes.md":  "notes\n",
}

func TestFilesGlob(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
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
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
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

func TestFilesDelete(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.DockerSandbox) {
		t.Run("File", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{"gone.txt": "x", "kept.txt": "y"})
			require.NoError(t, sb.Delete(testCtx(t), dir+"/gone.txt"))
			assert.Equal(t, []string{dir + "/kept.txt"}, lsPaths(t, sb, dir))
			_, err := sb.Read(testCtx(t), dir+"/gone.txt")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		})

		t.Run("DirectoryRecursively", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{"d/a.txt": "a", "d/x/y/z.txt": "z", "d/.hidden": "h", "kept.txt": "k"})
			mustSh(t, sb, "chmod 555 "+shellQuote(dir+"/d/x/y"))
			if mustSh(t, sb, "id -u") != "0" { // root deletes it anyway; another user may not
				require.ErrorIs(t, sb.Delete(testCtx(t), dir+"/d"), fs.ErrPermission)
				mustSh(t, sb, "chmod 755 "+shellQuote(dir+"/d/x/y"))
			}
			require.NoError(t, sb.Delete(testCtx(t), dir+"/d"))
			assert.Equal(t, []string{dir + "/kept.txt"}, lsPaths(t, sb, dir))
		})

		t.Run("Symlink", func(t *testing.T) {
			dir := testDir(t)
			writeTree(t, sb, dir, map[string]string{"target/f.txt": "f"})
			mustSh(t, sb, "cd "+shellQuote(dir)+" && ln -s target link && ln -s nowhere broken")
			require.NoError(t, sb.Delete(testCtx(t), dir+"/link"))
			require.NoError(t, sb.Delete(testCtx(t), dir+"/broken"))
			assert.Equal(t, []string{dir + "/target"}, lsPaths(t, sb, dir))
			assert.Equal(t, []string{dir + "/target/f.txt"}, lsPaths(t, sb, dir+"/target"), "the target is untouched")
		})

		t.Run("Missing", func(t *testing.T) {
			p := testDir(t) + "/missing"
			err := sb.Delete(testCtx(t), p)
			require.ErrorIs(t, err, fs.ErrNotExist)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, p, pe.Path)
		})

		t.Run("Root", func(t *testing.T) {
			for _, p := range []string{"/", "//", "/workspace/..", "/.."} {
				err := sb.Delete(testCtx(t), p)
				assert.ErrorIs(t, err, sandbox.ErrInvalidPath, "path %q", p)
			}
			assert.Contains(t, lsPaths(t, sb, "/"), "/workspace", "the root is intact")
		})

		// Keep this one last: it removes the working directory.
		t.Run("WorkingDir", func(t *testing.T) {
			err := sb.Delete(testCtx(t), "/workspace")
			volume := testenv.EngineName() == "kubernetes" // the working directory is an emptyDir's mount point
			switch {
			case secure:
				// A mount point on a read-only rootfs: unlinking it fails
				// first, so nothing is removed.
				require.ErrorContains(t, err, "read-only file system")
				assert.NotEmpty(t, lsPaths(t, sb, "/workspace"))
			case volume:
				// Its content goes; the mount point cannot.
				require.ErrorContains(t, err, "device or resource busy")
			default:
				require.NoError(t, err)
			}
			// The sandbox must keep working. (Bug: helper execs inherit the
			// container's working directory; once it is gone, runc fails to
			// start them and every call ends in "proto: malformed frame".)
			infos, err := sb.Ls(testCtx(t), "/")
			require.NoError(t, err, "ls / after the working directory was deleted")
			for _, fi := range infos {
				if !secure && !volume {
					assert.NotEqual(t, "/workspace", fi.Path)
				}
			}
			mustWrite(t, sb, "/workspace/again.txt", "recreated")
			assert.Equal(t, "/workspace", mustSh(t, sb, "pwd"))
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
