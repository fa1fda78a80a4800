package tools

import (
	"context"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFile(t *testing.T) {
	f := newFake()
	var got string
	f.write = func(_ string, content []byte) error { got = string(content); return nil }
	res := call(t, f, "write_file", `{"file_path": "src/a.py", "content": "print('hi')\n"}`)
	assert.Equal(t, Result{Text: "Updated file /workspace/src/a.py"}, res)
	assert.Equal(t, "print('hi')\n", got)

	for _, tt := range []struct {
		err  error
		want string
	}{
		{pathErr("write", "/d", textErr{"is a directory", sandbox.ErrIsDir}), "Failed to write file '/d': is_directory"},
		{pathErr("write", "/d", fs.ErrPermission), "Failed to write file '/d': permission_denied"},
		{pathErr("write", "/d", textErr{"not a directory", sandbox.ErrNotDir}), "Failed to write file '/d': invalid_path"},
		{pathErr("write", "/d", textErr{"no space left on device", nil}), "Failed to write file '/d': no space left on device"},
		{sandbox.ErrClosed, "Failed to write file '/d': sandbox: closed"},
	} {
		f.write = func(string, []byte) error { return tt.err }
		res := call(t, f, "write_file", `{"file_path": "/d", "content": ""}`)
		assert.True(t, res.IsError)
		assert.Equal(t, tt.want, res.Text)
	}
}

func TestEditFile(t *testing.T) {
	f := newFake()
	f.edit = func(_, _, _ string, replaceAll bool) (int, error) {
		if replaceAll {
			return 3, nil
		}
		return 1, nil
	}
	res := call(t, f, "edit_file", `{"file_path": "a.txt", "old_string": "x", "new_string": "y"}`)
	assert.Equal(t, Result{Text: "Successfully replaced 1 instance(s) of the string in '/workspace/a.txt'"}, res)
	assert.Equal(t, "edit /workspace/a.txt false", f.lastCall())
	res = call(t, f, "edit_file", `{"file_path": "/a.txt", "old_string": "x", "new_string": "y", "replace_all": true}`)
	assert.Equal(t, "Successfully replaced 3 instance(s) of the string in '/a.txt'", res.Text)

	for _, tt := range []struct {
		err  error
		want string
	}{
		{pathErr("edit", "/a", fs.ErrNotExist), "Error: File '/a' not found"},
		{pathErr("edit", "/a", fs.ErrPermission), "Error: Permission denied editing file '/a'"},
		{pathErr("edit", "/a", textErr{"is a directory", sandbox.ErrIsDir}), "Error: '/a' is not a regular file"},
		{pathErr("edit", "/a", sandbox.ErrNotRegular), "Error: '/a' is not a regular file"},
		{pathErr("edit", "/a", sandbox.ErrNotText), "Error: File '/a' is not a text file"},
		{pathErr("edit", "/a", sandbox.ErrStringNotFound), "Error: String not found in file: 'it's'"},
		{pathErr("edit", "/a", textErr{"string appears multiple times (2 occurrences)", sandbox.ErrMultipleOccurrences}),
			"Error: String 'it's' appears multiple times. Use replace_all=True to replace all occurrences."},
		{pathErr("edit", "/a", textErr{"no space left on device", nil}), "Error editing file '/a': no space left on device"},
		{sandbox.ErrClosed, "Error editing file '/a': sandbox: closed"},
	} {
		f.edit = func(string, string, string, bool) (int, error) { return 0, tt.err }
		res := call(t, f, "edit_file", `{"file_path": "/a", "old_string": "it's", "new_string": "y"}`)
		assert.True(t, res.IsError)
		assert.Equal(t, tt.want, res.Text)
	}
}

func TestDelete(t *testing.T) {
	f := newFake()
	res := call(t, f, "delete", `{"file_path": "build"}`)
	assert.Equal(t, Result{Text: "Deleted /workspace/build"}, res)
	for _, tt := range []struct {
		err  error
		want string
	}{
		{pathErr("delete", "/x", fs.ErrNotExist), "Error: '/x' not found"},
		{pathErr("delete", "/x", fs.ErrPermission), "Error deleting file '/x': permission_denied"},
		{pathErr("delete", "/", textErr{"invalid path", sandbox.ErrInvalidPath}), "Error deleting file '/x': invalid_path"},
	} {
		f.delete = func(string) error { return tt.err }
		res := call(t, f, "delete", `{"file_path": "/x"}`)
		assert.True(t, res.IsError)
		assert.Equal(t, tt.want, res.Text)
	}
}

func TestExecute(t *testing.T) {
	code := func(n int) *int { return &n }
	tests := []struct {
		name string
		resp sandbox.ExecuteResponse
		want Result
	}{
		{"success", sandbox.ExecuteResponse{Output: "42\n"}, Result{Text: "42\n\n[Command succeeded with exit code 0]", ExitCode: code(0)}},
		{"no output", sandbox.ExecuteResponse{}, Result{Text: "\n[Command succeeded with exit code 0]", ExitCode: code(0)}},
		{"failure", sandbox.ExecuteResponse{Output: "sh: nope: not found\n", ExitCode: 127},
			Result{Text: "sh: nope: not found\n\n[Command failed with exit code 127]", ExitCode: code(127)}},
		{"truncated", sandbox.ExecuteResponse{Output: "xx\n\n... Output truncated at 2 bytes.", Truncated: true},
			Result{Text: "xx\n\n... Output truncated at 2 bytes.\n[Command succeeded with exit code 0]\n[Output was truncated due to size limits]", ExitCode: code(0)}},
		{"timed out", sandbox.ExecuteResponse{Output: "Error: Command timed out after 1 seconds.", ExitCode: 124, TimedOut: true},
			Result{Text: "Error: Command timed out after 1 seconds.\n[Command failed with exit code 124]", ExitCode: code(124)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.execute = func(string) (sandbox.ExecuteResponse, error) { return tt.resp, nil }
			assert.Equal(t, tt.want, call(t, f, "execute", `{"command": "echo 42"}`))
			assert.Equal(t, "execute echo 42 []", f.lastCall())
		})
	}
}

func TestExecuteTimeoutArgument(t *testing.T) {
	tests := []struct {
		args string
		opts Options
		want string // "" = the command ran
		opt  string
	}{
		{`{"command": "x", "timeout": 0}`, Options{}, "", "[ExecTimeout]"},
		{`{"command": "x", "timeout": 3600}`, Options{}, "", "[ExecTimeout]"},
		{`{"command": "x"}`, Options{}, "", "[]"},
		{`{"command": "x", "timeout": -1}`, Options{}, "Error: timeout must be non-negative, got -1.", ""},
		{`{"command": "x", "timeout": 3601}`, Options{}, "Error: timeout 3601s exceeds maximum allowed (3600s).", ""},
		{`{"command": "x", "timeout": 61}`, Options{MaxExecuteTimeout: time.Minute}, "Error: timeout 61s exceeds maximum allowed (60s).", ""},
		{`{"command": "x", "timeout": 3}`, Options{MaxExecuteTimeout: 2500 * time.Millisecond}, "Error: timeout 3s exceeds maximum allowed (2.5s).", ""},
		{`{"command": "x", "timeout": 2}`, Options{MaxExecuteTimeout: 2500 * time.Millisecond}, "", "[ExecTimeout]"},
		{`{"command": "x", "timeout": 99999999999999999999999}`, Options{}, "Error: timeout 99999999999999999999999s exceeds maximum allowed (3600s).", ""},
		{`{"command": "x", "timeout": -99999999999999999999999}`, Options{}, "Error: timeout must be non-negative, got -99999999999999999999999.", ""},
	}
	for _, tt := range tests {
		f := newFake()
		res := callOpts(t, f, tt.opts, "execute", tt.args)
		if tt.want != "" {
			assert.Equal(t, errorText(tt.want), res, tt.args)
			assert.Empty(t, f.lastCall())
			continue
		}
		assert.False(t, res.IsError, tt.args)
		assert.Equal(t, "execute x "+tt.opt, f.lastCall(), tt.args)
	}
}

func TestExecuteErrors(t *testing.T) {
	f := newFake()
	res := call(t, f, "execute", `{"command": ""}`)
	one := 1
	assert.Equal(t, Result{Text: "Error: Command must be a non-empty string.\n[Command failed with exit code 1]", ExitCode: &one}, res)
	assert.Empty(t, f.lastCall())

	f.execute = func(string) (sandbox.ExecuteResponse, error) {
		return sandbox.ExecuteResponse{Output: "partial"}, fmt.Errorf("%w: container exited", sandbox.ErrGone)
	}
	res = call(t, f, "execute", `{"command": "sleep 9"}`)
	assert.Equal(t, errorText("Error: sandbox: container is gone: container exited"), res)

	f.execute = func(string) (sandbox.ExecuteResponse, error) { return sandbox.ExecuteResponse{}, context.Canceled }
	res = call(t, f, "execute", `{"command": "sleep 9"}`)
	assert.Equal(t, errorText("Error: context canceled"), res)
	require.Nil(t, res.ExitCode)
}
