package tools

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInvalidArguments(t *testing.T) {
	tests := []struct{ tool, args, want string }{
		{"ls", `{}`, `Error: invalid arguments for ls: missing required argument "path"`},
		{"ls", ``, `Error: invalid arguments for ls: missing required argument "path"`},
		{"ls", `null`, `Error: invalid arguments for ls: missing required argument "path"`},
		{"ls", `{"path": null}`, `Error: invalid arguments for ls: missing required argument "path"`},
		{"ls", `{"path": 3}`, `Error: invalid arguments for ls: "path" must be a string, got a number`},
		{"ls", `{"path": "/", "recursive": true}`, `Error: invalid arguments for ls: unknown argument "recursive"`},
		{"ls", `{"path": "/", "b": 1, "a": 2}`, `Error: invalid arguments for ls: unknown argument "a"; unknown argument "b"`},
		{"ls", `[]`, `Error: invalid arguments for ls: arguments must be a JSON object, got an array`},
		{"ls", `"x"`, `Error: invalid arguments for ls: arguments must be a JSON object, got a string`},
		{"ls", `{"path": "/"`, `Error: invalid arguments for ls: arguments are not valid JSON`},
		{"ls", `{"path": "/"} {}`, `Error: invalid arguments for ls: arguments are not valid JSON`},
		{"read_file", `{"file_path": "a", "offset": "5"}`, `Error: invalid arguments for read_file: "offset" must be an integer, got a string`},
		{"read_file", `{"file_path": "a", "limit": 2.5}`, `Error: invalid arguments for read_file: "limit" must be an integer, got 2.5`},
		{"read_file", `{"file_path": "a", "limit": true}`, `Error: invalid arguments for read_file: "limit" must be an integer, got a boolean`},
		{"read_file", `{"file_path": "a", "offset": 1e400}`, `Error: invalid arguments for read_file: "offset" is out of range: 1` + strings.Repeat("0", 400)},
		{"read_file", `{"file_path": "a", "offset": 1e100000000}`, `Error: invalid arguments for read_file: "offset" is out of range: 1e100000000`},
		{"read_file", `{"file_path": "a", "offset": 99999999999999999999}`, `Error: invalid arguments for read_file: "offset" is out of range: 99999999999999999999`},
		{"read_file", `{"offset": {}, "limit": []}`, `Error: invalid arguments for read_file: missing required argument "file_path"; "offset" must be an integer, got an object; "limit" must be an integer, got an array`},
		{"write_file", `{"file_path": "a"}`, `Error: invalid arguments for write_file: missing required argument "content"`},
		{"write_file", `{"file_path": "a", "content": ["x"]}`, `Error: invalid arguments for write_file: "content" must be a string, got an array`},
		{"edit_file", `{"file_path": "a", "old_string": "x"}`, `Error: invalid arguments for edit_file: missing required argument "new_string"`},
		{"edit_file", `{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "true"}`, `Error: invalid arguments for edit_file: "replace_all" must be a boolean (true or false), got a string`},
		{"edit_file", `{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": 1}`, `Error: invalid arguments for edit_file: "replace_all" must be a boolean (true or false), got a number`},
		{"glob", `{"path": "/"}`, `Error: invalid arguments for glob: missing required argument "pattern"`},
		{"glob", `{"pattern": "*", "path": false}`, `Error: invalid arguments for glob: "path" must be a string, got a boolean`},
		{"grep", `{"pattern": "x", "output_mode": "lines"}`, `Error: invalid arguments for grep: "output_mode" must be one of "files_with_matches", "content" or "count", got "lines"`},
		{"grep", `{"pattern": "x", "max_count": 0}`, `Error: invalid arguments for grep: "max_count" must be greater than 0, got 0`},
		{"grep", `{"pattern": "x", "max_count": -2}`, `Error: invalid arguments for grep: "max_count" must be greater than 0, got -2`},
		{"grep", `{"pattern": "x", "max_count": "10"}`, `Error: invalid arguments for grep: "max_count" must be an integer, got a string`},
		{"grep", `{"pattern": "x", "glob": 5}`, `Error: invalid arguments for grep: "glob" must be a string, got a number`},
		{"grep", `{"pattern": "x", "output_mode": null, "max_count": 0}`, `Error: invalid arguments for grep: "max_count" must be greater than 0, got 0`},
		{"execute", `{}`, `Error: invalid arguments for execute: missing required argument "command"`},
		{"execute", `{"command": "ls", "timeout": "60"}`, `Error: invalid arguments for execute: "timeout" must be an integer, got a string`},
		{"execute", `{"command": "ls", "timeout": 1.5}`, `Error: invalid arguments for execute: "timeout" must be an integer, got 1.5`},
		{"execute", `{"cmd": "ls"}`, `Error: invalid arguments for execute: missing required argument "command"; unknown argument "cmd"`},
		{"delete", `{"path": "/x"}`, `Error: invalid arguments for delete: missing required argument "file_path"; unknown argument "path"`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			f := newFake()
			res := call(t, f, tt.tool, tt.args)
			assert.True(t, res.IsError)
			assert.Equal(t, tt.want, res.Text)
			assert.Empty(t, f.lastCall(), "the sandbox was called")
		})
	}
}

func TestValidArgumentVariants(t *testing.T) {
	tests := []struct{ tool, args string }{
		{"read_file", `{"file_path": "a", "offset": null, "limit": null}`},
		{"read_file", `{"file_path": "a", "offset": 0.0, "limit": 1E2}`},
		{"read_file", ` {"file_path": "a"} `},
		{"grep", `{"pattern": "x", "path": null, "glob": null, "max_count": null, "output_mode": "count"}`},
		{"grep", `{"pattern": "x", "glob": ""}`},
		{"glob", `{"pattern": "*", "path": null}`},
		{"edit_file", `{"file_path": "a", "old_string": "", "new_string": "", "replace_all": false}`},
		{"execute", `{"command": "true", "timeout": null}`},
		{"execute", `{"command": "true", "timeout": 60.0}`},
		{"write_file", `{"file_path": "a", "content": "", "file_path": "b"}`}, // the last duplicate wins, as in Python
	}
	for _, tt := range tests {
		res := call(t, newFake(), tt.tool, tt.args)
		assert.False(t, res.IsError, "%s %s: %s", tt.tool, tt.args, res.Text)
	}
}
