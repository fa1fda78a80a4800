package tools

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
)

// fuzzSandbox answers every operation with data derived from content, so
// that the formatting code sees arbitrary text, paths and line numbers.
func fuzzSandbox(content string, n int) *fakeSandbox {
	f := newFake()
	lines := strings.Count(content, "\n") + 1
	f.read = func(p string) (sandbox.ReadResult, error) {
		switch n % 5 {
		case 0:
			return sandbox.ReadResult{Content: content, Encoding: "utf-8", StartLine: n%7 + 1, EndLine: n%7 + lines, TotalLines: n%11 - 1, NextOffset: n%13 - 1}, nil
		case 1:
			return sandbox.ReadResult{Content: base64.StdEncoding.EncodeToString([]byte(content)), Encoding: "base64", NextOffset: -1, TotalLines: -1}, nil
		case 2:
			return sandbox.ReadResult{Content: content, Encoding: "utf-8", NoLinesRequested: n%2 == 0, NextOffset: -1}, nil
		case 3:
			return sandbox.ReadResult{Content: content, Encoding: "utf-8", StartLine: n, EndLine: n - 3, TotalLines: n / 2, NextOffset: n}, nil
		}
		return sandbox.ReadResult{}, pathErr("read", p, textErr{content, sandbox.ErrOffsetOutOfRange})
	}
	paths := strings.Split(content, "\n")
	f.ls = func(string) ([]sandbox.FileInfo, error) { return infos(paths...), nil }
	f.glob = func(context.Context, string, string) (sandbox.GlobResult, error) {
		return sandbox.GlobResult{Matches: infos(paths...), Truncated: n%2 == 1}, nil
	}
	f.grep = func(string) (sandbox.GrepResult, error) {
		var ms []sandbox.GrepMatch
		for i, p := range paths {
			ms = append(ms, sandbox.GrepMatch{Path: p, Line: i - n, Text: content})
		}
		return sandbox.GrepResult{Matches: ms, Truncated: n%3 == 0}, nil
	}
	f.execute = func(string) (sandbox.ExecuteResponse, error) {
		return sandbox.ExecuteResponse{Output: content, ExitCode: n, Truncated: n%2 == 0}, nil
	}
	f.edit = func(string, string, string, bool) (int, error) { return n, nil }
	return f
}

func FuzzCall(f *testing.F) {
	names := []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "delete"}
	seeds := []string{
		`{"path": "/workspace"}`, `{"path": "../x"}`, `{}`, ``, `null`, `[]`, `{"path": 1}`,
		`{"file_path": "a.txt", "offset": -5, "limit": 0}`, `{"file_path": "a.txt", "offset": 1e400}`,
		`{"file_path": "C:\\x", "content": "x"}`, `{"file_path": "~/x", "old_string": "a", "new_string": "b", "replace_all": true}`,
		`{"pattern": "**/*.py", "path": null}`, `{"pattern": "/etc/*"}`,
		`{"pattern": "a|b", "output_mode": "content", "max_count": 2.0, "glob": "*.go"}`, `{"pattern": "x", "max_count": -1}`,
		`{"command": "echo hi", "timeout": 0}`, `{"command": "", "timeout": -1e30}`, `{"command": "x", "timeout": 1e100000000}`,
		`{"file_path": "\u0000"}`, `{"a": {"b": [1, 2, {"c": null}]}}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s), "line one\nline two", 3)
	}
	f.Add(uint8(1), []byte(`{"file_path": "x"}`), strings.Repeat("é", 6000)+"\n\xff\xfe", 0)
	f.Add(uint8(0), []byte(`{"path": "/"}`), "it's\n\"q\"\n\x01", 1)
	f.Fuzz(func(t *testing.T, which uint8, args []byte, content string, n int) {
		name := names[int(which)%len(names)]
		res := call(t, fuzzSandbox(content, n%1000), name, string(args))
		if strings.HasPrefix(res.Text, "Error: internal error") {
			t.Fatalf("%s(%s) panicked: %s", name, args, res.Text)
		}
		if res.Text == "" && name != "grep" { // grep of a file named "" prints ""
			t.Fatalf("%s(%s): empty text", name, args)
		}
		if res.Media != nil && res.IsError {
			t.Fatalf("%s(%s): media with an error", name, args)
		}
		if res.IsError && !utf8.ValidString(res.Text) && utf8.ValidString(string(args)) && utf8.ValidString(content) {
			t.Fatalf("%s(%s): invalid UTF-8 in %q", name, args, res.Text)
		}
	})
}
