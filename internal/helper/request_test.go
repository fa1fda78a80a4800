package helper

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// libraryRequests are requests as the library sends them.
var libraryRequests = []proto.Request{
	{Op: proto.OpExec, Command: "echo hi", Dir: "/workspace", Timeout: 120000, Combined: true},
	{Op: proto.OpExec, Command: "cat", Env: []string{"A=1"}, Dir: "/", Stdin: true},
	{Op: proto.OpExec, Command: "true"}, // no dir: the helper's own
	{Op: proto.OpRead, Path: "/workspace/a.txt", Offset: 10, Limit: 100},
	{Op: proto.OpRead, Path: "/a", Limit: 0},
	{Op: proto.OpWrite, Path: "/workspace/new/file"},
	{Op: proto.OpEdit, Path: "/a.txt", Old: "x", New: "y", ReplaceAll: true},
	{Op: proto.OpEdit, Path: "/a.txt", Old: "", New: "y"},
	{Op: proto.OpLs, Path: "/"},
	{Op: proto.OpGlob, Path: "/workspace", Pattern: "**/*.go"},
	{Op: proto.OpGlob, Path: "/workspace", Pattern: ""}, // left to fsops: invalid_pattern
	{Op: proto.OpGrep, Path: "/workspace", Pattern: "TODO", Glob: "*.go", MaxCount: 5},
	{Op: proto.OpDelete, Path: "/workspace/x"},
	{Op: proto.OpStat, Paths: []string{"/a", "/b/c"}},
	{Op: proto.OpPrepare, Paths: []string{"/workspace/up.bin"}},
	{Op: proto.OpRename, Path: "/w/.f.sandbox-upload-1", New: "/w/f"},
	{Op: proto.OpCat, Path: "/w/f", Limit: 100 << 20},
}

func TestDecodeRequestAccepts(t *testing.T) {
	for _, want := range libraryRequests {
		body, err := json.Marshal(want)
		require.NoError(t, err)
		got, perr := decodeRequest(body)
		require.Nil(t, perr, "%s", body)
		assert.Equal(t, want, got)
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	for _, tc := range []struct {
		payload, code, msg string
	}{
		{``, proto.CodeBadRequest, "unexpected end of JSON input"},
		{`{"op":`, proto.CodeBadRequest, "unexpected end"},
		{`{"op":"read","path":"/a"} {}`, proto.CodeBadRequest, "after top-level value"},
		{`[]`, proto.CodeBadRequest, "cannot unmarshal"},
		{`{"op":"read","path":1}`, proto.CodeBadRequest, "cannot unmarshal"},
		{`{"op":"read","path":"/a","offset":1e400}`, proto.CodeBadRequest, "cannot unmarshal"},
		{`null`, proto.CodeBadRequest, `unknown operation ""`},
		{`{"op":"kill"}`, proto.CodeBadRequest, "kill needs a session"},
		{`{"op":"kill","session":1}`, proto.CodeBadRequest, "kill needs a session"},
		{`{"op":"kill","session":-7}`, proto.CodeBadRequest, "kill needs a session"},
		{`{}`, proto.CodeBadRequest, `unknown operation ""`},
		{`{"op":"chmod","path":"/a"}`, proto.CodeBadRequest, `unknown operation "chmod"`},
		{`{"op":"READ","path":"/a"}`, proto.CodeBadRequest, `unknown operation "READ"`},
		{`{"op":"exec"}`, proto.CodeBadRequest, "exec without a command"},
		{`{"op":"exec","command":"true","timeout_ms":-1}`, proto.CodeBadRequest, "negative timeout -1"},
		{`{"op":"exec","command":"true","dir":"tmp"}`, proto.CodeInvalidPath, `dir "tmp" is not absolute`},
		{`{"op":"exec","command":"true","dir":"/tmp\u0000x"}`, proto.CodeInvalidPath, "NUL"},
		{`{"op":"read"}`, proto.CodeInvalidPath, "missing path"},
		{`{"op":"read","path":"a.txt"}`, proto.CodeInvalidPath, `path "a.txt" is not absolute`},
		{`{"op":"read","path":"./a"}`, proto.CodeInvalidPath, "not absolute"},
		{`{"op":"read","path":"/a","offset":-1}`, proto.CodeBadRequest, "negative offset -1"},
		{`{"op":"read","path":"/a","limit":-5}`, proto.CodeBadRequest, "negative limit -5"},
		{`{"op":"grep","path":"/a","pattern":"x","max_count":-1}`, proto.CodeBadRequest, "negative max count -1"},
		{`{"op":"write","path":""}`, proto.CodeInvalidPath, "missing path"},
		{`{"op":"edit","path":"~/a"}`, proto.CodeInvalidPath, "not absolute"},
		{`{"op":"ls","path":"C:\\x"}`, proto.CodeInvalidPath, "not absolute"},
		{`{"op":"glob","pattern":"*"}`, proto.CodeInvalidPath, "missing path"},
		{`{"op":"delete","path":"\u0000"}`, proto.CodeInvalidPath, "not absolute"},
		{`{"op":"delete","path":"/\u0000"}`, proto.CodeInvalidPath, "NUL"},
		{`{"op":"rename","path":"/a"}`, proto.CodeInvalidPath, "missing new"},
		{`{"op":"rename","path":"a","new":"/b"}`, proto.CodeInvalidPath, `path "a" is not absolute`},
		{`{"op":"stat"}`, proto.CodeBadRequest, "stat without paths"},
		{`{"op":"prepare","paths":[]}`, proto.CodeBadRequest, "prepare without paths"},
		{`{"op":"stat","paths":["/a","b"]}`, proto.CodeInvalidPath, `paths "b" is not absolute`},
		{`{"op":"prepare","paths":["/a",""]}`, proto.CodeInvalidPath, "missing paths"},
	} {
		req, perr := decodeRequest([]byte(tc.payload))
		if !assert.NotNil(t, perr, "%s accepted", tc.payload) {
			continue
		}
		assert.Equal(t, tc.code, perr.Code, tc.payload)
		assert.Contains(t, perr.Message, tc.msg, tc.payload)
		assert.Equal(t, proto.Request{}, req, tc.payload)
	}
}

// TestDecodeRequestKnowsEveryOp guards against an operation added to the
// protocol but not to decodeRequest, which would refuse it: every Op
// constant of package proto, in a well-formed request, is accepted.
func TestDecodeRequestKnowsEveryOp(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filepath.Join("..", "proto", "message.go"), nil, 0)
	require.NoError(t, err)
	var ops []string
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if strings.HasPrefix(name.Name, "Op") && i < len(vs.Values) {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				require.True(t, ok, "%s is not a literal", name.Name)
				op, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				ops = append(ops, op)
			}
		}
		return true
	})
	require.Contains(t, ops, proto.OpExec)
	for _, op := range ops {
		req := proto.Request{Op: op, Command: "true", Path: "/a", New: "/b", Paths: []string{"/c"}, Session: 2}
		body, err := json.Marshal(req)
		require.NoError(t, err)
		_, perr := decodeRequest(body)
		assert.Nil(t, perr, "operation %q refused", op)
	}
}

// TestServeRejectsBeforeRunning checks that Serve answers an invalid request
// with an error and runs nothing: the command would create a file.
func TestServeRejectsBeforeRunning(t *testing.T) {
	t.Chdir(t.TempDir()) // a relative path would be below it
	marker := filepath.Join(t.TempDir(), "ran")
	for _, req := range []proto.Request{
		{Op: proto.OpExec, Command: "touch " + marker, Timeout: -1},
		{Op: proto.OpExec, Command: "touch " + marker, Dir: "relative"},
		{Op: "Exec", Command: "touch " + marker},
		{Op: proto.OpWrite, Path: "relative/file"},
	} {
		w, r, stop := session(t)
		out, res := roundTrip(t, w, r, req, nil) // no input: a rejected request takes none
		stop()
		require.NotNil(t, res.Error, "%+v", req)
		assert.Contains(t, []string{proto.CodeBadRequest, proto.CodeInvalidPath}, res.Error.Code)
		assert.Empty(t, out)
		assert.NoFileExists(t, marker)
	}
	assert.NoFileExists(t, "relative/file")
}

// FuzzDecodeRequest decodes arbitrary payloads. Requests are only decoded,
// never run: a fuzzed exec could run anything on this machine.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range libraryRequests {
		body, _ := json.Marshal(req)
		f.Add(body)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"read"`, `{"op":"read","path":"a"}`, `{"op":"read","path":"/a","offset":-1}`,
		`{"op":"exec","command":"x","timeout_ms":-9223372036854775808}`, `{"op":"exec","command":"x","dir":"d"}`,
		`{"op":"stat","paths":["/a",null]}`, `{"op":"rename","path":"/a","new":"b"}`, `{"op":"read","path":"/\u0000"}`,
		`{"op":"read","path":"/a","limit":1e3}`, `{"op":"grep","path":"/\xff","pattern":"\xfe"}`, `{"OP":"ls","Path":"/"}`,
		`{"op":"ls","path":"/","op":"exec"}`, `{"op":"ls","path":"/","unknown":{"a":[1,2]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		req, perr := decodeRequest(payload)
		if perr != nil {
			if perr.Code != proto.CodeBadRequest && perr.Code != proto.CodeInvalidPath {
				t.Fatalf("code %q for %q", perr.Code, payload)
			}
			if perr.Message == "" {
				t.Fatalf("no message for %q", payload)
			}
			if len(perr.Message) > len(payload)+1000 { // JSON errors may quote a number; ours clip

				t.Fatalf("message of %d bytes for a payload of %d", len(perr.Message), len(payload))
			}
			return
		}
		abs := func(field, p string) {
			if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
				t.Fatalf("accepted %s %q in %q", field, p, payload)
			}
		}
		switch req.Op {
		case proto.OpExec:
			if req.Command == "" {
				t.Fatalf("accepted an exec without a command: %q", payload)
			}
			if req.Dir != "" {
				abs("dir", req.Dir)
			}
		case proto.OpRead, proto.OpWrite, proto.OpEdit, proto.OpLs, proto.OpGlob, proto.OpGrep, proto.OpDelete, proto.OpCat:
			abs("path", req.Path)
		case proto.OpRename:
			abs("path", req.Path)
			abs("new", req.New)
		case proto.OpStat, proto.OpPrepare:
			if len(req.Paths) == 0 {
				t.Fatalf("accepted %s without paths: %q", req.Op, payload)
			}
			for _, p := range req.Paths {
				abs("paths", p)
			}
		default:
			t.Fatalf("accepted op %q: %q", req.Op, payload)
		}
		if req.Timeout < 0 || req.Offset < 0 || req.Limit < 0 || req.MaxCount < 0 {
			t.Fatalf("accepted a negative number: %+v", req)
		}
		// What the helper accepted, re-encoded, is accepted as the same.
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, perr := decodeRequest(body)
		if perr != nil {
			t.Fatalf("re-encoded %q rejected: %v", body, perr)
		}
		if body2, _ := json.Marshal(again); !bytes.Equal(body, body2) {
			t.Fatalf("round trip changed %s into %s", body, body2)
		}
	})
}
