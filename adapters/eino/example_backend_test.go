package sandboxeino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/adk"
	fsmw "github.com/cloudwego/eino/adk/middlewares/filesystem"
	"github.com/cloudwego/eino/adk/prebuilt/deep"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/dockersandbox/sandbox"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
)

// A deep agent whose files and shell are a Docker sandbox. Any
// model.ToolCallingChatModel goes in ChatModel; here a stand-in that runs
// one command and answers with its output.
func ExampleNewBackend() {
	ctx := context.Background()
	// Any image works; this one is the tests' local busybox image.
	sb, err := sandbox.New(ctx, sandbox.WithImage("dockersandbox-test/busybox:1"), sandbox.WithPullPolicy(sandbox.PullNever))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	files, err := fsmw.NewMiddleware(ctx, &fsmw.Config{Backend: sandboxeino.NewBackend(sb)})
	if err != nil {
		fmt.Println(err)
		return
	}
	agent, err := deep.New(ctx, &deep.Config{Name: "coder", Description: "works in a sandbox",
		ChatModel: standIn{}, Middlewares: []adk.AgentMiddleware{files}})
	if err != nil {
		fmt.Println(err)
		return
	}
	events := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, "Which OS is this?")
	for {
		ev, ok := events.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			fmt.Println(ev.Err)
			return
		}
		if msg, _, err := adk.GetMessage(ev); err == nil && msg != nil && msg.Role == schema.Assistant && msg.Content != "" {
			fmt.Println(msg.Content)
		}
	}
	// Output:
	// Linux
}

// standIn is a chat model that calls execute once, then answers with the
// command's output.
type standIn struct{}

func (standIn) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if last := in[len(in)-1]; last.Role == schema.Tool {
		return schema.AssistantMessage(last.Content, nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{{ID: "1", Type: "function",
		Function: schema.FunctionCall{Name: "execute", Arguments: `{"command": "uname -s | tr -d '\\n'"}`}}}), nil
}

func (m standIn) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{msg}), err
}

func (m standIn) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }
