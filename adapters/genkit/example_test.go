package sandboxgenkit_test

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox"
	sandboxgenkit "github.com/dockersandbox/sandbox/adapters/genkit"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/firebase/genkit/go/genkit"
)

// With a model plugin, the tools go to Generate:
//
//	resp, err := genkit.Generate(ctx, g, ai.WithModelName("googleai/gemini-2.5-flash"),
//		ai.WithPrompt("Run the tests in /workspace"), ai.WithTools(sandboxgenkit.Refs(ts)...))
//
// Here a tool request is run the way Generate runs one: the tool is looked
// up by name and run on the model's input.
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

	g := genkit.Init(ctx) // no model plugin is needed to run tools
	ts := sandboxgenkit.DefineTools(g, sb, tools.Options{})
	fmt.Println(len(ts), "tools")

	resp, err := genkit.LookupTool(g, "execute").RunRawMultipart(ctx, map[string]any{"command": "echo $((6*7))"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Output)
	// Output:
	// 8 tools
	// 42
	//
	// [Command succeeded with exit code 0]
}
