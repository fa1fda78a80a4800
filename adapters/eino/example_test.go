package sandboxeino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/dockersandbox/sandbox"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
	"github.com/dockersandbox/sandbox/tools"
)

// The tools go to a ToolsNode (or react.NewAgent's ToolsConfig); their
// Info goes to the chat model. Here the model's answer is written by hand:
// an assistant message with tool calls.
func Example() {
	ctx := context.Background()
	// Any image works; this one is the tests' local busybox image.
	sb, err := sandbox.New(ctx, sandbox.WithImage("dockersandbox-test/busybox:1"), sandbox.WithPullPolicy(sandbox.PullNever),
		sandbox.WithNetworkMode("none"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools: sandboxeino.Tools(sb, tools.Options{}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs, err := node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{
		{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: "execute", Arguments: `{"command": "echo $((6*7))"}`}},
		{ID: "call_2", Type: "function", Function: schema.FunctionCall{Name: "read_file", Arguments: `{"file_path": "../etc/passwd"}`}},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range msgs { // the tool messages that go back to the model
		fmt.Printf("%s %s:\n%s\n", m.ToolCallID, m.ToolName, m.Content)
	}
	// Output:
	// call_1 execute:
	// 42
	//
	// [Command succeeded with exit code 0]
	// call_2 read_file:
	// Error: Path traversal not allowed: ../etc/passwd
}
