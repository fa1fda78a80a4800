package integration

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Integration tests of Write, Read and Edit against the real daemon, on
// every test image (those of Ls, Glob, Grep and Delete are beside them).

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
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
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
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
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
				{"limit", []sandbox.ReadOption{sandbox.ReadLimit(3)}, lines(1, 3), 1, 3, 3},
				{"offset_limit", []sandbox.ReadOption{sandbox.ReadOffset(2), sandbox.ReadLimit(3)}, lines(3, 5), 3, 5, 5},
				{"last_page_short", []sandbox.ReadOption{sandbox.ReadOffset(7), sandbox.ReadLimit(5)}, lines(8, 10), 8, 10, -1},
				{"last_page_exact", []sandbox.ReadOption{sandbox.ReadOffset(7), sandbox.ReadLimit(3)}, lines(8, 10), 8, 10, -1},
				{"last_line", []sandbox.ReadOption{sandbox.ReadOffset(9)}, lines(10, 10), 10, 10, -1},
				{"one_line", []sandbox.ReadOption{sandbox.ReadOffset(4), sandbox.ReadLimit(1)}, lines(5, 5), 5, 5, 5},
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
				_, err := sb.Read(testCtx(t), p, sandbox.ReadOffset(offset))
				require.ErrorIs(t, err, sandbox.ErrOffsetOutOfRange, "offset %d", offset)
				assert.Contains(t, err.Error(), fmt.Sprintf("Line offset %d exceeds file length (3 lines)", offset))
			}
		})

		t.Run("NegativeOptions", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "a\n")
			_, err := sb.Read(testCtx(t), p, sandbox.ReadOffset(-1))
			assert.Error(t, err)
			_, err = sb.Read(testCtx(t), p, sandbox.ReadLimit(-1))
			assert.Error(t, err)
		})

		t.Run("LimitZero", func(t *testing.T) {
			p := testDir(t) + "/f.txt"
			mustWrite(t, sb, p, "a\nb\n")
			res, err := sb.Read(testCtx(t), p, sandbox.ReadLimit(0))
			require.NoError(t, err)
			assert.True(t, res.NoLinesRequested)
			assert.Equal(t, "", res.Content)
			assert.Equal(t, "utf-8", res.Encoding)
		})

		t.Run("EmptyFile", func(t *testing.T) {
			p := testDir(t) + "/empty.txt"
			mustWrite(t, sb, p, "")
			// The reminder wins over the offset and the limit.
			for _, opts := range [][]sandbox.ReadOption{nil, {sandbox.ReadLimit(0)}, {sandbox.ReadOffset(5)}} {
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
					res, err := sb.Read(testCtx(t), p, sandbox.ReadOffset(1), sandbox.ReadLimit(1))
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

			res, err = sb.Read(testCtx(t), p, sandbox.ReadOffset(res.NextOffset))
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
			res, err := sb.Read(testCtx(t), p, sandbox.ReadLimit(2))
			require.NoError(t, err)
			assert.Equal(t, "1\n2", res.Content)
			assert.Equal(t, -1, res.TotalLines)
			assert.Equal(t, 2, res.NextOffset)

			res, err = sb.Read(testCtx(t), p, sandbox.ReadOffset(299998))
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
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
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
