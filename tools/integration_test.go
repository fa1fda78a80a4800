package tools_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tools end to end, against real sandboxes on both test images.

var images = []string{testenv.BusyboxImage, testenv.DebianImage}

// agent runs tools of one set the way an agent loop does.
type agent struct {
	t   *testing.T
	set []tools.Tool
}

func (a agent) call(name, arguments string) tools.Result {
	a.t.Helper()
	tool, ok := tools.Lookup(a.set, name)
	require.True(a.t, ok, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return tool.Call(ctx, json.RawMessage(arguments))
}

// ok calls a tool and requires success with exactly want.
func (a agent) ok(name, arguments, want string) tools.Result {
	a.t.Helper()
	res := a.call(name, arguments)
	assert.False(a.t, res.IsError, "%s %s: %s", name, arguments, res.Text)
	assert.Equal(a.t, want, res.Text, "%s %s", name, arguments)
	return res
}

// fails calls a tool and requires an error with exactly want.
func (a agent) fails(name, arguments, want string) {
	a.t.Helper()
	res := a.call(name, arguments)
	assert.True(a.t, res.IsError, "%s %s: %s", name, arguments, res.Text)
	assert.Equal(a.t, want, res.Text, "%s %s", name, arguments)
}

// sh runs a command through the execute tool and returns its output
// without the status line, requiring exit code 0.
func (a agent) sh(command string) string {
	a.t.Helper()
	res := a.call("execute", fmt.Sprintf(`{"command": %q}`, command))
	require.NotNil(a.t, res.ExitCode, res.Text)
	require.Equal(a.t, 0, *res.ExitCode, res.Text)
	return strings.TrimSuffix(res.Text, "\n[Command succeeded with exit code 0]")
}

func args(kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func imageName(image string) string {
	name, _, _ := strings.Cut(path.Base(image), ":")
	return name
}

func TestToolsEndToEnd(t *testing.T) {
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			sb := sandboxtest.New(t, image)
			a := agent{t: t, set: tools.New(sb, tools.Options{})}

			t.Run("relative paths land in the working dir", func(t *testing.T) {
				a := agent{t, a.set}
				a.ok("write_file", args("file_path", "main.py", "content", "print('hi')\n"), "Updated file /workspace/main.py")
				assert.Equal(t, "print('hi')\n", a.sh("cat /workspace/main.py"))
				assert.Equal(t, "no\n", a.sh("test -e /main.py && echo yes || echo no"))
				a.ok("read_file", args("file_path", "./main.py"), "1  print('hi')")
				a.ok("read_file", args("file_path", "/workspace/main.py"), "1  print('hi')")
				a.ok("ls", args("path", "."), "['/workspace/main.py']")
				a.ok("delete", args("file_path", "main.py"), "Deleted /workspace/main.py")
				a.ok("ls", args("path", ""), "No files found")
			})

			t.Run("traversal is rejected", func(t *testing.T) {
				a := agent{t, a.set}
				a.fails("read_file", args("file_path", "../etc/passwd"), "Error: Path traversal not allowed: ../etc/passwd")
				a.fails("write_file", args("file_path", "/workspace/../x", "content", "x"), "Error: Path traversal not allowed: /workspace/../x")
				a.fails("ls", args("path", "~"), "Error: Path traversal not allowed: ~")
				a.fails("delete", args("file_path", `C:\x`), `Error: Windows absolute paths are not supported: C:\x. Please use virtual paths starting with / (e.g., /workspace/file.txt)`)
				assert.Equal(t, "no\n", a.sh("test -e /x && echo yes || echo no"))
			})

			t.Run("write, read and edit", func(t *testing.T) {
				a := agent{t, a.set}
				a.ok("write_file", args("file_path", "rw/hello.txt", "content", "line one\nline two\n"), "Updated file /workspace/rw/hello.txt")
				a.ok("read_file", args("file_path", "rw/hello.txt"), "1  line one\n2  line two")
				a.ok("read_file", args("file_path", "rw/hello.txt", "limit", 1),
					"1  line one\n\n[Read 1 line (lines 1-1 of 2 total). 1 line remaining from offset 1.]")
				a.ok("read_file", args("file_path", "rw/hello.txt", "offset", 1), "2  line two")
				a.ok("read_file", args("file_path", "rw/hello.txt", "offset", -2),
					"1  line one\n2  line two\n\n[Requested offset -2 is before the start of the file; read from line 1 instead.]")
				a.ok("read_file", args("file_path", "rw/hello.txt", "limit", 0),
					"System reminder: no lines were read because `limit` was 0. The file was not inspected and may have contents; retry with `limit` >= 1 to read it.")
				a.fails("read_file", args("file_path", "rw/hello.txt", "offset", 5),
					"Error: File '/workspace/rw/hello.txt': Line offset 5 exceeds file length (2 lines)")
				a.fails("read_file", args("file_path", "rw/nope.txt"), "Error: File '/workspace/rw/nope.txt': file_not_found")
				a.fails("read_file", args("file_path", "rw"), "Error: File '/workspace/rw': not_a_file")

				a.ok("edit_file", args("file_path", "rw/hello.txt", "old_string", "two", "new_string", "2"),
					"Successfully replaced 1 instance(s) of the string in '/workspace/rw/hello.txt'")
				a.ok("edit_file", args("file_path", "rw/hello.txt", "old_string", "line", "new_string", "LINE", "replace_all", true),
					"Successfully replaced 2 instance(s) of the string in '/workspace/rw/hello.txt'")
				assert.Equal(t, "LINE one\nLINE 2\n", a.sh("cat rw/hello.txt"))
				a.fails("edit_file", args("file_path", "rw/hello.txt", "old_string", "LINE", "new_string", "x"),
					"Error: String 'LINE' appears multiple times. Use replace_all=True to replace all occurrences.")
				a.fails("edit_file", args("file_path", "rw/hello.txt", "old_string", "absent", "new_string", "x"),
					"Error: String not found in file: 'absent'")
				a.fails("edit_file", args("file_path", "rw/none.txt", "old_string", "a", "new_string", "b"),
					"Error: File '/workspace/rw/none.txt' not found")
				a.fails("edit_file", args("file_path", "rw", "old_string", "a", "new_string", "b"),
					"Error: '/workspace/rw' is not a regular file")
				a.fails("write_file", args("file_path", "rw", "content", "x"), "Failed to write file '/workspace/rw': is_directory")

				a.ok("write_file", args("file_path", "rw/empty.txt", "content", ""), "Updated file /workspace/rw/empty.txt")
				a.ok("read_file", args("file_path", "rw/empty.txt"), "System reminder: File exists but has empty contents")
				a.ok("write_file", args("file_path", "rw/blank.txt", "content", "  \n\t\n"), "Updated file /workspace/rw/blank.txt")
				a.ok("read_file", args("file_path", "rw/blank.txt"), "System reminder: File exists but has empty contents")

				long := strings.Repeat("a", 5000) + strings.Repeat("b", 5000) + "c"
				a.ok("write_file", args("file_path", "rw/long.txt", "content", "short\n"+long+"\nend\n"), "Updated file /workspace/rw/long.txt")
				a.ok("read_file", args("file_path", "rw/long.txt", "limit", 2),
					"  1  short\n  2  "+strings.Repeat("a", 5000)+"\n2.1  "+strings.Repeat("b", 5000)+"\n2.2  c"+
						"\n\n[Read 2 lines (lines 1-2 of 3 total). 1 line remaining from offset 2.]")
			})

			t.Run("read_file caps the page at 80000 characters", func(t *testing.T) {
				a := agent{t, a.set}
				var b strings.Builder
				for i := range 3000 {
					fmt.Fprintf(&b, "%04d %s\n", i, strings.Repeat("x", 95))
				}
				a.ok("write_file", args("file_path", "cap/big.txt", "content", b.String()), "Updated file /workspace/cap/big.txt")
				res := a.call("read_file", args("file_path", "cap/big.txt", "limit", 2000))
				require.False(t, res.IsError, res.Text)
				assert.LessOrEqual(t, len([]rune(res.Text)), 80000)
				assert.True(t, strings.Contains(res.Text, "\n\n[Output was truncated due to size limits. The file content is very large. Consider reformatting the file to make it easier to navigate. For example, if this is JSON, use execute(command='jq . /workspace/cap/big.txt') to pretty-print it"), "truncation message")
				// Rows are "   1  0000 xxx…" (106 characters): 743 fit with the message and the notice.
				tail := res.Text[len(res.Text)-100:]
				assert.True(t, strings.HasSuffix(res.Text, "\n\n[Read 743 lines (lines 1-743 of 3000 total). 2257 lines remaining from offset 743.]"), tail)
				assert.True(t, strings.Contains(res.Text, "\n 743  0742 x"), "line 743 is shown")
				assert.False(t, strings.Contains(res.Text, "\n 744  0743"), "line 744 is not shown")
			})

			t.Run("media", func(t *testing.T) {
				a := agent{t, a.set}
				png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
				require.NoError(t, sb.Write(context.Background(), "img/dot.png", png))
				res := a.ok("read_file", args("file_path", "img/dot.png"),
					fmt.Sprintf("/workspace/img/dot.png is an image (image/png, %d bytes); its content is attached as base64 data.", len(png)))
				require.NotNil(t, res.Media)
				assert.Equal(t, tools.Media{Type: "image", MIMEType: "image/png", Data: base64.StdEncoding.EncodeToString(png)}, *res.Media)

				bin := []byte{0, 1, 2, 0xff, 0xfe, 0}
				require.NoError(t, sb.Write(context.Background(), "img/blob.dat", bin))
				res = a.ok("read_file", args("file_path", "img/blob.dat"),
					"/workspace/img/blob.dat is a binary file (application/octet-stream, 6 bytes); its content is attached as base64 data.")
				require.NotNil(t, res.Media)
				assert.Equal(t, tools.Media{Type: "file", MIMEType: "application/octet-stream", Data: base64.StdEncoding.EncodeToString(bin)}, *res.Media)
			})

			t.Run("ls", func(t *testing.T) {
				a := agent{t, a.set}
				a.sh("mkdir -p ls/sub ls/empty && touch ls/a.txt \"ls/it's.txt\" ls/.hidden")
				a.ok("ls", args("path", "ls"), `['/workspace/ls/.hidden', '/workspace/ls/a.txt', '/workspace/ls/empty', "/workspace/ls/it's.txt", '/workspace/ls/sub']`)
				a.ok("ls", args("path", "/workspace/ls/empty/"), "No files found")
				a.fails("ls", args("path", "ls/missing"), "Error: Path '/workspace/ls/missing': path_not_found")
				a.fails("ls", args("path", "ls/a.txt"), "Error: Path '/workspace/ls/a.txt': not_a_directory")
			})

			t.Run("glob", func(t *testing.T) {
				a := agent{t, a.set}
				a.sh("mkdir -p gl/src/deep gl/.git && touch gl/a.py gl/src/b.py gl/src/deep/c.py gl/.git/d.py gl/readme.md")
				a.ok("glob", args("pattern", "*.py", "path", "gl"),
					"['/workspace/gl/.git/d.py', '/workspace/gl/a.py', '/workspace/gl/src/b.py', '/workspace/gl/src/deep/c.py']")
				a.ok("glob", args("pattern", "src/**/*.py", "path", "/workspace/gl"), "['/workspace/gl/src/b.py', '/workspace/gl/src/deep/c.py']")
				a.ok("glob", args("pattern", "/*.py", "path", "gl"), "['/workspace/gl/a.py']")
				a.ok("glob", args("pattern", "gl/*.{py,md}"), "['/workspace/gl/a.py', '/workspace/gl/readme.md']")
				a.ok("glob", args("pattern", "/workspace/gl/src/*.py"), "['/workspace/gl/src/b.py']")
				a.ok("glob", args("pattern", "*.rs", "path", "gl"), "No files found")
				a.fails("glob", args("pattern", "*.py", "path", "gl/nowhere"), "Error: Path '/workspace/gl/nowhere': path_not_found")
				a.fails("glob", args("pattern", "a/../*.py", "path", "gl"), "Error: Path '/workspace/gl': invalid_pattern")
			})

			t.Run("grep", func(t *testing.T) {
				a := agent{t, a.set}
				a.ok("write_file", args("file_path", "gr/a.py", "content", "import os\nprint(os.sep)\n"), "Updated file /workspace/gr/a.py")
				a.ok("write_file", args("file_path", "gr/sub/b.txt", "content", "no match\nos: yes\nos|sep\n"), "Updated file /workspace/gr/sub/b.txt")
				a.ok("grep", args("pattern", "os", "path", "gr"), "/workspace/gr/a.py\n/workspace/gr/sub/b.txt")
				a.ok("grep", args("pattern", "os", "path", "gr", "output_mode", "count"), "/workspace/gr/a.py: 2\n/workspace/gr/sub/b.txt: 2")
				a.ok("grep", args("pattern", "os", "path", "gr", "output_mode", "content"),
					"/workspace/gr/a.py:\n  1: import os\n  2: print(os.sep)\n/workspace/gr/sub/b.txt:\n  2: os: yes\n  3: os|sep")
				a.ok("grep", args("pattern", "os", "path", "gr", "glob", "*.py"), "/workspace/gr/a.py")
				a.ok("grep", args("pattern", "os|sep", "path", "gr"), "/workspace/gr/sub/b.txt")
				a.ok("grep", args("pattern", "print(", "path", "gr/a.py", "output_mode", "content"), "/workspace/gr/a.py:\n  2: print(os.sep)")
				a.ok("grep", args("pattern", "absent", "path", "gr"), "No matches found")
				a.ok("grep", args("pattern", "import .*", "path", "gr"), "No matches found\n\nNote: grep searches for the pattern as literal text, not as a regular expression, so characters such as `|`, `.*`, `.+` and `\\.` only match themselves. Search for the exact text you expect, and run one search per alternative instead of combining them with `|`.")
				a.ok("grep", args("pattern", "os", "path", "gr", "max_count", 3, "output_mode", "count"),
					"/workspace/gr/a.py: 2\n/workspace/gr/sub/b.txt: 1\n\nNote: the search stopped early (it hit its time limit or the maximum match count). The matches above are valid but incomplete. Narrow the search (a more specific pattern or a narrower path), or raise max_count, to see the rest.")
				a.ok("grep", args("pattern", "import os"), "/workspace/gr/a.py")
				a.fails("grep", args("pattern", "x", "path", "gr/missing"), "Path '/workspace/gr/missing': path_not_found")
			})

			t.Run("execute", func(t *testing.T) {
				a := agent{t, a.set}
				res := a.ok("execute", args("command", "echo hi; exit 3"), "hi\n\n[Command failed with exit code 3]")
				require.NotNil(t, res.ExitCode)
				assert.Equal(t, 3, *res.ExitCode)
				res = a.ok("execute", args("command", "pwd"), "/workspace\n\n[Command succeeded with exit code 0]")
				assert.Equal(t, 0, *res.ExitCode)
				a.ok("execute", args("command", "echo out; echo err >&2"), "out\nerr\n\n[Command succeeded with exit code 0]")
				start := time.Now()
				res = a.ok("execute", args("command", "echo started; sleep 30", "timeout", 1),
					"started\nError: Command timed out after 1 seconds.\n[Command failed with exit code 124]")
				assert.Equal(t, 124, *res.ExitCode)
				assert.Less(t, time.Since(start), 20*time.Second)
				a.ok("execute", args("command", "sleep 1; echo done", "timeout", 0), "done\n\n[Command succeeded with exit code 0]")
				a.fails("execute", args("command", "true", "timeout", -1), "Error: timeout must be non-negative, got -1.")
				a.fails("execute", args("command", "true", "timeout", 3601), "Error: timeout 3601s exceeds maximum allowed (3600s).")
				a.ok("execute", args("command", ""), "Error: Command must be a non-empty string.\n[Command failed with exit code 1]")
			})

			t.Run("delete", func(t *testing.T) {
				a := agent{t, a.set}
				a.sh("mkdir -p del/dir/sub && touch del/f del/dir/sub/g")
				a.ok("delete", args("file_path", "del/f"), "Deleted /workspace/del/f")
				a.fails("delete", args("file_path", "del/f"), "Error: '/workspace/del/f' not found")
				a.ok("delete", args("file_path", "/workspace/del/dir"), "Deleted /workspace/del/dir")
				a.ok("ls", args("path", "del"), "No files found")
			})
		})
	}
}

func TestToolsAfterClose(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage)
	a := agent{t: t, set: tools.New(sb, tools.Options{})}
	require.NoError(t, sb.Close())
	a.fails("execute", args("command", "true"), "Error: sandbox: closed")
	a.fails("read_file", args("file_path", "a"), "Error: File '/workspace/a': sandbox: closed")
	a.fails("glob", args("pattern", "*"), "Error: glob failed: sandbox: closed")
}

func TestToolsOtherWorkingDir(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage, sandbox.WithWorkingDir("/srv/app"))
	a := agent{t: t, set: tools.New(sb, tools.Options{})}
	a.ok("write_file", args("file_path", "x.txt", "content", "x"), "Updated file /srv/app/x.txt")
	a.ok("glob", args("pattern", "*.txt"), "['/srv/app/x.txt']")
	a.ok("grep", args("pattern", "x"), "/srv/app/x.txt")
	a.ok("execute", args("command", "cat x.txt"), "x\n[Command succeeded with exit code 0]")
	tool, _ := tools.Lookup(a.set, "read_file")
	assert.Contains(t, tool.Description, "relative to the working directory /srv/app")
	assert.Contains(t, string(tool.InputSchema), "relative to /srv/app")
}
