package sandboxlangchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	sandboxlangchaingo "github.com/dockersandbox/sandbox/adapters/langchaingo"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"
	lctools "github.com/tmc/langchaingo/tools"
)

// TestMain builds the test images if needed and fails the run if a test
// leaves a sandbox behind.
func TestMain(m *testing.M) { testenv.Main(m) }

var toolNames = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "delete"}

func find(t *testing.T, ts []lctools.Tool, name string) lctools.Tool {
	t.Helper()
	for _, lt := range ts {
		if lt.Name() == name {
			return lt
		}
	}
	require.Failf(t, "no tool", "%s", name)
	return nil
}

// otherTool is a langchaingo tool of another kind.
type otherTool struct{}

func (otherTool) Name() string                                 { return "other" }
func (otherTool) Description() string                          { return "not a sandbox tool" }
func (otherTool) Call(context.Context, string) (string, error) { return "", nil }

// TestDefinitions: names, descriptions with the input note, and function
// definitions carrying the tools' JSON Schemas.
func TestDefinitions(t *testing.T) {
	ts := sandboxlangchaingo.Tools(nil, tools.Options{})
	set := tools.New(nil, tools.Options{})
	defs := sandboxlangchaingo.Definitions(append(ts, otherTool{}))
	require.Len(t, ts, len(toolNames))
	require.Len(t, defs, len(toolNames), "other tools are left out")
	for i, name := range toolNames {
		assert.Equal(t, name, ts[i].Name())
		assert.True(t, strings.HasPrefix(ts[i].Description(), set[i].Description+"\n\nInput: a JSON object with the arguments, of JSON Schema "+string(set[i].InputSchema)), name)
		d := defs[i]
		assert.Equal(t, "function", d.Type)
		assert.Equal(t, name, d.Function.Name)
		assert.Equal(t, set[i].Description, d.Function.Description)
		params, ok := d.Function.Parameters.(map[string]any)
		require.True(t, ok, "Parameters is %T; langchaingo's googleai client needs a map", d.Function.Parameters)
		got, err := json.Marshal(params)
		require.NoError(t, err)
		assert.JSONEq(t, string(set[i].InputSchema), string(got), name)
	}
	assert.True(t, strings.HasSuffix(find(t, ts, "execute").Description(), "; or just the command, as plain text."))
	assert.True(t, strings.HasSuffix(find(t, ts, "read_file").Description(), "; or just the file_path, as plain text."))
	assert.True(t, strings.HasSuffix(find(t, ts, "write_file").Description(), `"additionalProperties":false}.`))
}

// TestCall calls the tools through langchaingo's tool interface, with
// JSON arguments and with plain text, on a real sandbox.
func TestCall(t *testing.T) {
	ctx := sandboxtest.Context(t)
	ts := sandboxlangchaingo.Tools(sandboxtest.Busybox(t), tools.Options{})
	call := func(name, input string) string {
		t.Helper()
		out, err := find(t, ts, name).Call(ctx, input)
		require.NoError(t, err, name)
		return out
	}
	assert.Equal(t, "hi\n\n[Command failed with exit code 3]", call("execute", `{"command": "echo hi; exit 3"}`))
	assert.Equal(t, "hi\n\n[Command succeeded with exit code 0]", call("execute", "echo hi"))
	assert.Equal(t, "hi\n\n[Command succeeded with exit code 0]", call("execute", `"echo hi"`), "a JSON string")
	assert.Equal(t, "a\nb\n\n[Command succeeded with exit code 0]", call("execute", "{ echo a; echo b; }"), "not JSON: a command")
	assert.Equal(t, "Updated file /workspace/src/a.txt", call("write_file", `{"file_path": "src/a.txt", "content": "alpha\nbeta gamma\n"}`))
	assert.Equal(t, "1  alpha\n2  beta gamma", call("read_file", "src/a.txt"))
	assert.Equal(t, "2  beta gamma", call("read_file", ` {"file_path": "/workspace/src/a.txt", "offset": 1} `))
	assert.Equal(t, "/workspace/src/a.txt", call("grep", "gamma"))
	assert.Equal(t, "/workspace/src/a.txt:\n  2: beta gamma", call("grep", `{"pattern": "gamma", "output_mode": "content"}`))
	assert.Equal(t, "['/workspace/src/a.txt']", call("ls", "src\n"))
	assert.Equal(t, "['/workspace/src/a.txt']", call("glob", "*.txt"))
	assert.Equal(t, "Deleted /workspace/src/a.txt", call("delete", "src/a.txt"))

	// Failures are the text, never an error.
	assert.Equal(t, "Error: Path traversal not allowed: ../etc/passwd", call("read_file", "../etc/passwd"))
	assert.Contains(t, call("write_file", "src/b.txt"), "Error: invalid arguments for write_file")
	assert.Contains(t, call("write_file", ""), "Error: invalid arguments for write_file")
	assert.Contains(t, call("execute", ""), "Error: invalid arguments for execute")
	assert.Contains(t, call("ls", `{"path": "/", "all": true}`), "Error: invalid arguments for ls")

	// Media cannot be shown.
	_, err := find(t, ts, "execute").Call(ctx, `printf '\211PNG\r\n\032\n' > pic.png`)
	require.NoError(t, err)
	assert.Equal(t, "/workspace/pic.png is an image (image/png, 8 bytes); its content cannot be shown (this tool returns text only).",
		call("read_file", "pic.png"))
}

// scriptedModel is an llms.Model that answers with the given choices in
// turn and records the messages it gets.
type scriptedModel struct {
	mu       sync.Mutex
	answers  []*llms.ContentChoice
	requests [][]llms.MessageContent
	options  []llms.CallOptions
}

func (m *scriptedModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	m.requests = append(m.requests, msgs)
	m.options = append(m.options, o)
	if len(m.answers) == 0 {
		return nil, errors.New("no more answers")
	}
	c := m.answers[0]
	m.answers = m.answers[1:]
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{c}}, nil
}

func (m *scriptedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// text is all the text of msgs.
func text(msgs []llms.MessageContent) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				b.WriteString(p.Text)
			case llms.ToolCallResponse:
				b.WriteString(p.Content)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// steps returns the intermediate steps of an executor's result.
func steps(t *testing.T, out map[string]any) []schema.AgentStep {
	t.Helper()
	s, ok := out["intermediateSteps"].([]schema.AgentStep)
	require.True(t, ok, "intermediateSteps: %T", out["intermediateSteps"])
	return s
}

// TestOneShotAgent runs the tools from langchaingo's ReAct (MRKL) agent,
// whose model writes "Action:" and "Action Input:" lines.
func TestOneShotAgent(t *testing.T) {
	ctx := sandboxtest.Context(t)
	ts := sandboxlangchaingo.Tools(sandboxtest.Busybox(t), tools.Options{})
	m := &scriptedModel{answers: []*llms.ContentChoice{
		{Content: "Thought: write it\nAction: write_file\nAction Input: {\"file_path\": \"hello.sh\", \"content\": \"echo hello\\n\"}"},
		{Content: "Thought: run it\nAction: execute\nAction Input: sh hello.sh"},
		{Content: "Thought: look\nAction: read_file\nAction Input: \"hello.sh\""},
		{Content: "Thought: I now know the final answer\nFinal Answer: it says hello"},
	}}
	executor := agents.NewExecutor(agents.NewOneShotAgent(m, ts), agents.WithReturnIntermediateSteps(), agents.WithMaxIterations(5))
	out, err := chains.Call(ctx, executor, map[string]any{"input": "write and run a script"})
	require.NoError(t, err)
	assert.Equal(t, "it says hello", out["output"])
	s := steps(t, out)
	require.Len(t, s, 3)
	assert.Equal(t, "Updated file /workspace/hello.sh", s[0].Observation)
	assert.Equal(t, "hello\n\n[Command succeeded with exit code 0]", s[1].Observation)
	assert.Equal(t, "1  echo hello", s[2].Observation)

	prompt := text(m.requests[0])
	assert.Contains(t, prompt, "execute: Executes a shell command", "the model sees the descriptions")
	assert.Contains(t, prompt, "; or just the command, as plain text.")
	assert.Contains(t, text(m.requests[2]), "Observation: hello\n\n[Command succeeded with exit code 0]", "the model sees the results")
}

// TestFunctionsAgent runs the tools from langchaingo's tool-calling agent,
// whose model answers with tool calls: JSON arguments, or an "__arg1"
// string (the agent's own single-argument convention).
func TestFunctionsAgent(t *testing.T) {
	ctx := sandboxtest.Context(t)
	ts := sandboxlangchaingo.Tools(sandboxtest.Busybox(t), tools.Options{})
	tc := func(id, name, args string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
	}
	m := &scriptedModel{answers: []*llms.ContentChoice{
		{ToolCalls: []llms.ToolCall{
			tc("1", "write_file", `{"file_path": "n.txt", "content": "one\ntwo\n"}`),
			tc("2", "grep", `{"__arg1": "two"}`),
			tc("3", "edit_file", `{"file_path": "n.txt", "old_string": "zzz", "new_string": "y"}`),
		}},
		{ToolCalls: []llms.ToolCall{tc("4", "execute", `{"command": "cat n.txt | wc -l"}`)}},
		{Content: "two lines"},
	}}
	executor := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(m, ts), agents.WithReturnIntermediateSteps())
	out, err := chains.Call(ctx, executor, map[string]any{"input": "count"})
	require.NoError(t, err)
	assert.Equal(t, "two lines", out["output"])
	s := steps(t, out)
	require.Len(t, s, 4)
	assert.Equal(t, "Updated file /workspace/n.txt", s[0].Observation)
	assert.Equal(t, "/workspace/n.txt", s[1].Observation)
	assert.Equal(t, "Error: String not found in file: 'zzz'", s[2].Observation)
	assert.Equal(t, "2\n\n[Command succeeded with exit code 0]", s[3].Observation)
	assert.Contains(t, text(m.requests[2]), "2\n\n[Command succeeded with exit code 0]", "the model sees the results")
}

// TestCallTool: a chat model's native tool calls, offered with
// Definitions and answered with CallTool.
func TestCallTool(t *testing.T) {
	ctx := sandboxtest.Context(t)
	ts := sandboxlangchaingo.Tools(sandboxtest.Busybox(t), tools.Options{})
	m := &scriptedModel{answers: []*llms.ContentChoice{
		{ToolCalls: []llms.ToolCall{
			{ID: "a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "execute", Arguments: `{"command": "echo 42"}`}},
			{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "rm_rf", Arguments: `{}`}},
		}},
		{Content: "42"},
	}}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "what is 6*7?")}
	for {
		resp, err := m.GenerateContent(ctx, msgs, llms.WithTools(sandboxlangchaingo.Definitions(ts)))
		require.NoError(t, err)
		choice := resp.Choices[0]
		if len(choice.ToolCalls) == 0 {
			assert.Equal(t, "42", choice.Content)
			break
		}
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		for _, call := range choice.ToolCalls {
			ai.Parts = append(ai.Parts, call)
		}
		msgs = append(msgs, ai)
		for _, call := range choice.ToolCalls {
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{sandboxlangchaingo.CallTool(ctx, ts, call)}})
		}
	}
	require.Len(t, m.options[0].Tools, len(toolNames))
	assert.Equal(t, llms.ToolCallResponse{ToolCallID: "a", Name: "execute", Content: "42\n\n[Command succeeded with exit code 0]"}, msgs[2].Parts[0])
	assert.Equal(t, llms.ToolCallResponse{ToolCallID: "b", Name: "rm_rf", Content: "Error: rm_rf is not a valid tool, try another one"}, msgs[3].Parts[0])
	assert.Equal(t, "Error: the tool call names no function", sandboxlangchaingo.CallTool(ctx, ts, llms.ToolCall{ID: "c"}).Content)
}

// TestCallToolEvictsUnderCallID: a result too large for the model is
// evicted to a file named after the chat model's tool call ID, which the
// model reads back with read_file.
func TestCallToolEvictsUnderCallID(t *testing.T) {
	t.Parallel()
	ctx := sandboxtest.Context(t)
	ts := sandboxlangchaingo.Tools(sandboxtest.Busybox(t), tools.Options{})
	big := llms.ToolCall{ID: "call_lc1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "execute",
		Arguments: `{"command": "yes 0123456789 | head -n 9000; echo LAST"}`}} // 99,005 bytes: over 80,000
	resp := sandboxlangchaingo.CallTool(ctx, ts, big)
	assert.Equal(t, "call_lc1", resp.ToolCallID)
	assert.True(t, strings.HasPrefix(resp.Content, "Tool result too large, the result of this tool call call_lc1 was saved in the filesystem at this path: /large_tool_results/call_lc1\n"), "%.300s", resp.Content)
	read := sandboxlangchaingo.CallTool(ctx, ts, llms.ToolCall{ID: "call_lc2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "read_file",
		Arguments: `{"file_path": "/large_tool_results/call_lc1", "offset": 9000, "limit": 1}`}})
	assert.Contains(t, read.Content, "9001  LAST")
}
