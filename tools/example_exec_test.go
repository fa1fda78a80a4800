package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/tools"
)

// The session tools in Codex's shape: exec_command returns a session ID
// for a command still running after its yield time; write_stdin with empty
// chars collects what it printed since, until it exits.
func ExampleNewExec() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.WithImage("dockersandbox-test/busybox:1"), sandbox.WithPullPolicy(sandbox.PullNever))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	set := append(tools.New(sb, tools.Options{}), tools.NewExec(sb, tools.Options{})...)
	call := func(name, arguments string) {
		tool, _ := tools.Lookup(set, name)
		res := tool.Call(ctx, json.RawMessage(arguments))
		// Skip the "Chunk ID" and "Wall time" lines, which vary.
		lines := strings.Split(res.Text, "\n")
		if len(lines) > 2 && strings.HasPrefix(lines[0], "Chunk ID: ") {
			lines = lines[2:]
		}
		fmt.Printf("%s %s\n%s\n", name, arguments, strings.Join(lines, "\n"))
	}
	call("exec_command", `{"cmd": "echo building; sleep 3; echo built", "yield_time_ms": 1000}`)
	call("write_stdin", `{"session_id": 1000, "chars": ""}`)
	call("write_stdin", `{"session_id": 1000, "chars": ""}`)
	// Output:
	// exec_command {"cmd": "echo building; sleep 3; echo built", "yield_time_ms": 1000}
	// Process running with session ID 1000
	// Original token count: 3
	// Output:
	// building
	//
	// write_stdin {"session_id": 1000, "chars": ""}
	// Process exited with code 0
	// Original token count: 2
	// Output:
	// built
	//
	// write_stdin {"session_id": 1000, "chars": ""}
	// write_stdin failed: Unknown process id 1000 (list_sessions lists the open sessions; a session ends once its exit was reported)
}
