package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/tools"
)

// An agent loop offers every tool's Name, Description and InputSchema to
// the model, then runs the calls the model makes and sends back the texts.
func Example() {
	ctx := context.Background()
	// Any image works; this one is the tests' local busybox image.
	sb, err := sandbox.New(ctx, sandbox.WithImage("dockersandbox-test/busybox:1"), sandbox.WithPullPolicy(sandbox.PullNever))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	set := tools.New(sb, tools.Options{})
	for _, t := range set {
		_ = t.InputSchema // with t.Name and t.Description: the model's tool definitions
	}

	// Tool calls as a model makes them: a name and JSON arguments.
	calls := []struct{ name, arguments string }{
		{"write_file", `{"file_path": "hello.py", "content": "print('hello')\nprint('bye')\n"}`},
		{"read_file", `{"file_path": "hello.py", "limit": 1}`},
		{"edit_file", `{"file_path": "hello.py", "old_string": "bye", "new_string": "goodbye"}`},
		{"grep", `{"pattern": "print", "output_mode": "count"}`},
		{"execute", `{"command": "wc -l < hello.py"}`},
		{"read_file", `{"file_path": "../etc/passwd"}`},
	}
	for _, c := range calls {
		tool, ok := tools.Lookup(set, c.name)
		if !ok {
			continue
		}
		res := tool.Call(ctx, json.RawMessage(c.arguments))
		fmt.Printf("%s (error: %v):\n%s\n\n", c.name, res.IsError, res.Text)
	}
	// Output:
	// write_file (error: false):
	// Updated file /workspace/hello.py
	//
	// read_file (error: false):
	// 1  print('hello')
	//
	// [Read 1 line (lines 1-1 of 2 total). 1 line remaining from offset 1.]
	//
	// edit_file (error: false):
	// Successfully replaced 1 instance(s) of the string in '/workspace/hello.py'
	//
	// grep (error: false):
	// /workspace/hello.py: 2
	//
	// execute (error: false):
	// 2
	//
	// [Command succeeded with exit code 0]
	//
	// read_file (error: true):
	// Error: Path traversal not allowed: ../etc/passwd
}
