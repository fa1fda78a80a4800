package sandboxeino_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/adk/filesystem"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/stretchr/testify/assert"
)

// op is one backend call, its result rendered as text: paths and matches
// sorted (InMemoryBackend returns them in map order), any error as
// "error".
type op func(ctx context.Context, b filesystem.Backend) string

func render(v any, err error) string {
	if err != nil {
		return "error"
	}
	var lines []string
	switch v := v.(type) {
	case []filesystem.FileInfo:
		for _, fi := range v {
			lines = append(lines, fi.Path)
		}
	case []filesystem.GrepMatch:
		for _, m := range v {
			lines = append(lines, fmt.Sprintf("%s:%d:%q", m.Path, m.Line, m.Content))
		}
	case string:
		return v
	case nil:
		return "ok"
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func ls(p string) op {
	return func(ctx context.Context, b filesystem.Backend) string {
		return render(b.LsInfo(ctx, &filesystem.LsInfoRequest{Path: p}))
	}
}

func read(p string, offset, limit int) op {
	return func(ctx context.Context, b filesystem.Backend) string {
		return render(b.Read(ctx, &filesystem.ReadRequest{FilePath: p, Offset: offset, Limit: limit}))
	}
}

func grep(pattern, p, glob string) op {
	return func(ctx context.Context, b filesystem.Backend) string {
		return render(b.GrepRaw(ctx, &filesystem.GrepRequest{Pattern: pattern, Path: p, Glob: glob}))
	}
}

func glob(pattern, p string) op {
	return func(ctx context.Context, b filesystem.Backend) string {
		return render(b.GlobInfo(ctx, &filesystem.GlobInfoRequest{Pattern: pattern, Path: p}))
	}
}

func write(p, content string) op {
	return func(ctx context.Context, b filesystem.Backend) string {
		return render(nil, b.Write(ctx, &filesystem.WriteRequest{FilePath: p, Content: content}))
	}
}

func edit(p, old, new string, all bool) op {
	return func(ctx context.Context, b filesystem.Backend) string {
		return render(nil, b.Edit(ctx, &filesystem.EditRequest{FilePath: p, OldString: old, NewString: new, ReplaceAll: all}))
	}
}

const w = "/workspace/cmp"

// TestCompareInMemory runs the same calls, in order, on Eino's
// InMemoryBackend and on ours, and compares the results. Where they
// differ, the row says both results and why; each difference is in the
// package documentation (and README.md).
func TestCompareInMemory(t *testing.T) {
	ctx := sandboxtest.Context(t)
	ours := sandboxeino.NewBackend(sandboxtest.Busybox(t))
	mem := filesystem.NewInMemoryBackend()
	rows := []struct {
		name string
		op   op
		want string // both backends' result, unless diff
		// A difference: our result, the in-memory one.
		diff      bool
		ours, mem string
	}{
		{name: "write", op: write(w+"/a.txt", "alpha\nbeta\ngamma\n"), want: "ok"},
		{name: "write nested", op: write(w+"/src/util/u.go", "package util\n// TODO: y\n"), want: "ok"},
		{name: "write more", op: write(w+"/src/main.go", "package main\n// TODO: x\n"), want: "ok"},
		{name: "write hidden", op: write(w+"/.hidden.go", "// TODO hidden\n"), want: "ok"},
		{name: "write empty", op: write(w+"/empty.txt", ""), want: "ok"},
		{name: "write crlf", op: write(w+"/crlf.txt", "one\r\ntwo\r\n"), want: "ok"},
		{name: "write no final newline", op: write(w+"/noeol.txt", "x\ny"), want: "ok"},
		{name: "write existing", op: write(w+"/a.txt", "new"), want: "error"},

		{name: "ls", op: ls(w), want: w + "/.hidden.go\n" + w + "/a.txt\n" + w + "/crlf.txt\n" + w + "/empty.txt\n" + w + "/noeol.txt\n" + w + "/src"},
		{name: "ls nested, trailing slash", op: ls(w + "/src/"), want: w + "/src/main.go\n" + w + "/src/util"},
		{name: "ls a file", op: ls(w + "/a.txt"), want: w + "/a.txt"},
		{name: "ls missing", op: ls(w + "/nope"), diff: true, ours: "error", mem: ""},

		{name: "read no final newline", op: read(w+"/noeol.txt", 0, 0), want: "     1\tx\n     2\ty"},
		{name: "read page", op: read(w+"/a.txt", 1, 1), want: "     2\tbeta"},
		{name: "read negative offset", op: read(w+"/a.txt", -5, 1), want: "     1\talpha"},
		{name: "read past the end", op: read(w+"/a.txt", 10, 5), want: ""},
		{name: "read missing", op: read(w+"/nope.txt", 0, 0), want: "error"},
		{name: "read final newline", op: read(w+"/a.txt", 0, 0), diff: true,
			ours: "     1\talpha\n     2\tbeta\n     3\tgamma", mem: "     1\talpha\n     2\tbeta\n     3\tgamma\n     4\t"},
		{name: "read at the line count", op: read(w+"/a.txt", 3, 0), diff: true, ours: "", mem: "     4\t"},
		{name: "read empty file", op: read(w+"/empty.txt", 0, 0), diff: true, ours: "System reminder: File exists but has empty contents", mem: "     1\t"},
		{name: "read crlf", op: read(w+"/crlf.txt", 0, 0), diff: true, ours: "     1\tone\n     2\ttwo", mem: "     1\tone\r\n     2\ttwo\r\n     3\t"},
		{name: "read relative", op: read("cmp/noeol.txt", 0, 0), diff: true, ours: "     1\tx\n     2\ty", mem: "error"},

		{name: "grep", op: grep("TODO", w, ""), want: w + "/.hidden.go:1:\"// TODO hidden\"\n" + w + "/src/main.go:2:\"// TODO: x\"\n" + w + "/src/util/u.go:2:\"// TODO: y\""},
		{name: "grep glob", op: grep("TODO", w, "*.go"), want: w + "/.hidden.go:1:\"// TODO hidden\"\n" + w + "/src/main.go:2:\"// TODO: x\"\n" + w + "/src/util/u.go:2:\"// TODO: y\""},
		{name: "grep a file", op: grep("beta", w+"/a.txt", ""), want: w + "/a.txt:2:\"beta\""},
		{name: "grep default path", op: grep("gamma", "", ""), want: w + "/a.txt:3:\"gamma\""},
		{name: "grep no match", op: grep("zeta", w, ""), want: ""},
		{name: "grep glob with a slash", op: grep("TODO", w, "src/*.go"), diff: true, ours: w + "/src/main.go:2:\"// TODO: x\"", mem: ""},
		{name: "grep glob braces", op: grep("a", w, "{a,b}.txt"), diff: true, ours: w + "/a.txt:1:\"alpha\"\n" + w + "/a.txt:2:\"beta\"\n" + w + "/a.txt:3:\"gamma\"", mem: ""},
		{name: "grep empty pattern", op: grep("", w+"/noeol.txt", ""), diff: true, ours: "error", mem: w + "/noeol.txt:1:\"x\"\n" + w + "/noeol.txt:2:\"y\""},
		{name: "grep missing path", op: grep("x", w+"/nope", ""), diff: true, ours: "error", mem: ""},
		{name: "grep crlf", op: grep("one", w, "crlf.txt"), diff: true, ours: w + "/crlf.txt:1:\"one\"", mem: w + "/crlf.txt:1:\"one\\r\""},

		{name: "glob", op: glob("*.txt", w), want: w + "/a.txt\n" + w + "/crlf.txt\n" + w + "/empty.txt\n" + w + "/noeol.txt"},
		{name: "glob nothing", op: glob("*.md", w), want: ""},
		{name: "glob unclosed bracket", op: glob("[", w), diff: true, ours: "", mem: "error"},
		{name: "glob dot-file", op: glob("*.go", w), diff: true, ours: w + "/src/main.go\n" + w + "/src/util/u.go", mem: w + "/.hidden.go\n" + w + "/src/main.go\n" + w + "/src/util/u.go"},
		{name: "glob **", op: glob("**/*.go", w), diff: true, ours: w + "/src/main.go\n" + w + "/src/util/u.go", mem: ""},
		{name: "glob with a slash", op: glob("src/*.go", w), diff: true, ours: w + "/src/main.go", mem: ""},
		{name: "glob absolute", op: glob(w+"/src/*.go", ""), diff: true, ours: w + "/src/main.go", mem: ""},

		{name: "edit", op: edit(w+"/a.txt", "beta", "BETA", false), want: "ok"},
		{name: "edit read back", op: read(w+"/a.txt", 1, 1), want: "     2\tBETA"},
		{name: "edit not found", op: edit(w+"/a.txt", "delta", "x", false), want: "error"},
		{name: "edit several", op: edit(w+"/src/main.go", "a", "A", false), want: "error"},
		{name: "edit all", op: edit(w+"/src/main.go", "a", "A", true), want: "ok"},
		{name: "edit all read back", op: read(w+"/src/main.go", 0, 1), want: "     1\tpAckAge mAin"},
		{name: "edit empty old", op: edit(w+"/a.txt", "", "x", false), want: "error"},
		{name: "edit missing file", op: edit(w+"/nope.txt", "a", "b", false), want: "error"},
		{name: "edit same string", op: edit(w+"/a.txt", "alpha", "alpha", false), want: "ok"},
		{name: "edit crlf with lf", op: edit(w+"/crlf.txt", "one\ntwo", "1\n2", false), diff: true, ours: "ok", mem: "error"},
	}
	for _, r := range rows {
		gotOurs, gotMem := r.op(ctx, ours), r.op(ctx, mem)
		if !r.diff {
			r.ours, r.mem = r.want, r.want
		}
		assert.Equal(t, r.ours, gotOurs, "%s: ours", r.name)
		assert.Equal(t, r.mem, gotMem, "%s: in-memory", r.name)
	}
}
