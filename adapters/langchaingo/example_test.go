package sandboxlangchaingo_test

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox"
	sandboxlangchaingo "github.com/dockersandbox/sandbox/adapters/langchaingo"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/schema"
)

// The tools go to an agent executor. langchaingo's fake model plays the
// LLM here: it asks for one command, then answers.
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

	llm := fake.NewFakeLLM([]string{
		"Thought: compute it in the sandbox\nAction: execute\nAction Input: echo $((6*7))",
		"Thought: I now know the final answer\nFinal Answer: 42",
	})
	ts := sandboxlangchaingo.Tools(sb, tools.Options{})
	executor := agents.NewExecutor(agents.NewOneShotAgent(llm, ts), agents.WithReturnIntermediateSteps())
	out, err := chains.Call(ctx, executor, map[string]any{"input": "What is 6*7?"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, step := range out["intermediateSteps"].([]schema.AgentStep) {
		fmt.Printf("%s(%s):\n%s\n", step.Action.Tool, step.Action.ToolInput, step.Observation)
	}
	fmt.Println("answer:", out["output"])
	// Output:
	// execute(echo $((6*7))):
	// 42
	//
	// [Command succeeded with exit code 0]
	// answer: 42
}
