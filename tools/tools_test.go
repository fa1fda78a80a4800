package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewOrderAndLookup(t *testing.T) {
	set := New(newFake(), Options{})
	var names []string
	for _, tool := range set {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "delete"}, names)

	tool, ok := Lookup(set, "grep")
	assert.True(t, ok)
	assert.Equal(t, "grep", tool.Name)
	_, ok = Lookup(set, "upload_files")
	assert.False(t, ok, "uploads are not tools")
}

// schema is the part of a JSON Schema the tests look at.
type schema struct {
	Type       string                    `json:"type"`
	Properties map[string]map[string]any `json:"properties"`
	Required   []string                  `json:"required"`
	Additional *bool                     `json:"additionalProperties"`
}

func TestSchemas(t *testing.T) {
	want := map[string]struct {
		props    []string
		required []string
	}{
		"ls":         {[]string{"path"}, []string{"path"}},
		"read_file":  {[]string{"file_path", "limit", "offset"}, []string{"file_path"}},
		"write_file": {[]string{"content", "file_path"}, []string{"file_path", "content"}},
		"edit_file":  {[]string{"file_path", "new_string", "old_string", "replace_all"}, []string{"file_path", "old_string", "new_string"}},
		"glob":       {[]string{"path", "pattern"}, []string{"pattern"}},
		"grep":       {[]string{"glob", "max_count", "output_mode", "path", "pattern"}, []string{"pattern"}},
		"execute":    {[]string{"command", "timeout"}, []string{"command"}},
		"delete":     {[]string{"file_path"}, []string{"file_path"}},
	}
	f := &fakeSandbox{wd: `/home/"q"\w`}
	for _, tool := range New(f, Options{MaxExecuteTimeout: 90 * time.Second, GrepMaxCount: 7}) {
		t.Run(tool.Name, func(t *testing.T) {
			var s schema
			require.NoError(t, json.Unmarshal(tool.InputSchema, &s), "%s", tool.InputSchema)
			assert.Equal(t, "object", s.Type)
			require.NotNil(t, s.Additional)
			assert.False(t, *s.Additional)
			var props []string
			for name, p := range s.Properties {
				props = append(props, name)
				assert.NotEmpty(t, p["type"], name)
				assert.NotEmpty(t, p["description"], name)
			}
			slices.Sort(props)
			assert.Equal(t, want[tool.Name].props, props)
			assert.Equal(t, want[tool.Name].required, s.Required)
			for name, p := range s.Properties {
				if strings.Contains(name, "path") {
					assert.Contains(t, p["description"], `relative to /home/"q"\w`, name)
				}
			}
			assert.Contains(t, tool.Description, `/home/"q"\w`)
		})
	}
	var s schema
	tool, _ := Lookup(New(f, Options{MaxExecuteTimeout: 90 * time.Second}), "execute")
	require.NoError(t, json.Unmarshal(tool.InputSchema, &s))
	assert.EqualValues(t, 90, s.Properties["timeout"]["maximum"])
	tool, _ = Lookup(New(f, Options{}), "read_file")
	require.NoError(t, json.Unmarshal(tool.InputSchema, &s))
	assert.EqualValues(t, 100, s.Properties["limit"]["default"])
	tool, _ = Lookup(New(f, Options{}), "grep")
	require.NoError(t, json.Unmarshal(tool.InputSchema, &s))
	assert.Equal(t, []any{"files_with_matches", "content", "count"}, s.Properties["output_mode"]["enum"])
}

func TestDescriptions(t *testing.T) {
	set := New(newFake(), Options{})
	desc := func(name string) string {
		tool, _ := Lookup(set, name)
		return tool.Description
	}
	for _, tool := range set {
		for _, ph := range []string{"{wd}", "{max_timeout}", "{grep_max}"} {
			assert.NotContains(t, tool.Description, ph, tool.Name+": unfilled placeholder")
			assert.NotContains(t, string(tool.InputSchema), ph, tool.Name+": unfilled placeholder")
		}
		assert.Contains(t, tool.Description, "/workspace", tool.Name)
	}
	assert.Contains(t, desc("grep"), "LITERAL")
	assert.Contains(t, desc("grep"), "default 1000")
	assert.Contains(t, desc("glob"), "`**`")
	assert.Contains(t, desc("execute"), "0 means that maximum")
	assert.Contains(t, desc("execute"), "at most 3600")
	assert.Contains(t, desc("read_file"), "continuation markers")
}

func TestCallNeverPanics(t *testing.T) {
	var zero Tool
	res := zero.Call(context.Background(), nil)
	assert.True(t, res.IsError)

	f := newFake()
	f.ls = func(string) ([]sandbox.FileInfo, error) { panic("boom") }
	res = call(t, f, "ls", `{"path": "/"}`)
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: internal error in tool ls: boom", res.Text)

	set := New(nil, Options{})
	tool, _ := Lookup(set, "ls")
	//lint:ignore SA1012 a nil context must not panic
	res = tool.Call(nil, json.RawMessage(`{"path": "/"}`))
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: no sandbox is attached to this tool", res.Text)
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	assert.Equal(t, 3600*time.Second, o.MaxExecuteTimeout)
	assert.Equal(t, 1000, o.GrepMaxCount)
	assert.Equal(t, 10*time.Second, o.GlobTimeout)
	assert.Equal(t, sandbox.DefaultMaxOutputBytes, o.MaxOutputBytes)
	assert.Equal(t, DefaultMaxSessions, o.MaxSessions)
	assert.Equal(t, DefaultMaxPollTime, o.MaxPollTime)
	assert.Equal(t, DefaultEvictTokens, o.EvictTokens)
	assert.Equal(t, "/large_tool_results", o.EvictDir)
	assert.EqualValues(t, sandbox.DefaultCaptureBytes, o.MaxCaptureBytes)
	assert.False(t, o.CaptureOutput, "off, as in deepagents")
	o = Options{MaxExecuteTimeout: time.Minute, GrepMaxCount: 5, GlobTimeout: time.Second, MaxOutputBytes: 9, MaxSessions: 3, MaxPollTime: 6 * time.Second,
		EvictTokens: 7, EvictDir: "/r", CaptureOutput: true, MaxCaptureBytes: 11}.withDefaults()
	assert.Equal(t, Options{MaxExecuteTimeout: time.Minute, GrepMaxCount: 5, GlobTimeout: time.Second, MaxOutputBytes: 9, MaxSessions: 3, MaxPollTime: 6 * time.Second,
		EvictTokens: 7, EvictDir: "/r", CaptureOutput: true, MaxCaptureBytes: 11}, o)
	assert.Equal(t, 0, Options{EvictTokens: -1}.withDefaults().evictLimit(), "negative: off")
	assert.Equal(t, 5*time.Second, Options{MaxPollTime: time.Second}.withDefaults().MaxPollTime, "a poll waits 5 s at least")
}

func TestResolve(t *testing.T) {
	e := &env{wd: "/workspace"}
	tests := []struct{ in, want, err string }{
		{"main.py", "/workspace/main.py", ""},
		{"./src/a.go", "/workspace/src/a.go", ""},
		{"", "/workspace", ""},
		{".", "/workspace", ""},
		{"/etc/passwd", "/etc/passwd", ""},
		{"/a//b/./c/", "/a/b/c", ""},
		{`/a\b`, "/a/b", ""},
		{`sub\x.txt`, "/workspace/sub/x.txt", ""},
		{"foo..bar.txt", "/workspace/foo..bar.txt", ""},
		{"a/~b", "/workspace/a/~b", ""},
		{"../etc/passwd", "", "Error: Path traversal not allowed: ../etc/passwd"},
		{"/workspace/../etc", "", "Error: Path traversal not allowed: /workspace/../etc"},
		{`a\..\b`, "", `Error: Path traversal not allowed: a\..\b`},
		{"..", "", "Error: Path traversal not allowed: .."},
		{"~/x", "", "Error: Path traversal not allowed: ~/x"},
		{"~", "", "Error: Path traversal not allowed: ~"},
		{`C:\Users\x`, "", `Error: Windows absolute paths are not supported: C:\Users\x. Please use virtual paths starting with / (e.g., /workspace/file.txt)`},
		{"d:/x", "", "Error: Windows absolute paths are not supported: d:/x. Please use virtual paths starting with / (e.g., /workspace/file.txt)"},
	}
	for _, tt := range tests {
		got, err := e.resolve(tt.in)
		assert.Equal(t, tt.want, got, "resolve(%q)", tt.in)
		assert.Equal(t, tt.err, err, "resolve(%q)", tt.in)
	}
}

func TestRelativePathsLandInTheWorkingDir(t *testing.T) {
	f := &fakeSandbox{wd: "/srv/app"}
	for _, c := range []struct{ tool, args, call string }{
		{"ls", `{"path": "."}`, "ls /srv/app"},
		{"read_file", `{"file_path": "main.py"}`, "read /srv/app/main.py [ReadOffset ReadLimit]"},
		{"write_file", `{"file_path": "pkg/x.go", "content": "x"}`, "write /srv/app/pkg/x.go 1"},
		{"edit_file", `{"file_path": "x", "old_string": "a", "new_string": "b"}`, "edit /srv/app/x false"},
		{"glob", `{"pattern": "*.py"}`, "glob *.py /srv/app"},
		{"glob", `{"pattern": "*.py", "path": "src"}`, "glob *.py /srv/app/src"},
		{"glob", `{"pattern": "/etc/*.conf"}`, "glob /etc/*.conf /"},
		{"glob", `{"pattern": "/*.py", "path": "/srv"}`, "glob /*.py /srv"},
		{"grep", `{"pattern": "x"}`, "grep x /srv/app [GrepMaxCount]"},
		{"grep", `{"pattern": "x", "path": "src"}`, "grep x /srv/app/src [GrepMaxCount]"},
		{"delete", `{"file_path": "tmp"}`, "delete /srv/app/tmp"},
	} {
		res := call(t, f, c.tool, c.args)
		assert.False(t, res.IsError, "%s %s: %s", c.tool, c.args, res.Text)
		assert.Equal(t, c.call, f.lastCall(), "%s %s", c.tool, c.args)
	}
}

func TestPathValidationInEveryTool(t *testing.T) {
	for _, c := range []struct{ tool, args string }{
		{"ls", `{"path": "../x"}`},
		{"read_file", `{"file_path": "/workspace/../etc/passwd"}`},
		{"write_file", `{"file_path": "~/.bashrc", "content": ""}`},
		{"edit_file", `{"file_path": "a/../../b", "old_string": "a", "new_string": "b"}`},
		{"glob", `{"pattern": "*", "path": ".."}`},
		{"grep", `{"pattern": "x", "path": "../"}`},
		{"delete", `{"file_path": ".."}`},
	} {
		f := newFake()
		res := call(t, f, c.tool, c.args)
		assert.True(t, res.IsError, c.tool)
		assert.True(t, strings.HasPrefix(res.Text, "Error: Path traversal not allowed: "), "%s: %s", c.tool, res.Text)
		assert.Empty(t, f.lastCall(), "%s reached the sandbox", c.tool)
	}
}
