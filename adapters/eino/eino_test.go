package sandboxeino_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain builds the test images if needed and fails the run if a test
// leaves a sandbox behind.
func TestMain(m *testing.M) { testenv.Main(m) }

var toolNames = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "delete"}

// byName indexes eino tools by the name of their Info.
func byName(t *testing.T, ctx context.Context, ts []tool.BaseTool) map[string]tool.BaseTool {
	t.Helper()
	m := map[string]tool.BaseTool{}
	for _, bt := range ts {
		info, err := bt.Info(ctx)
		require.NoError(t, err)
		m[info.Name] = bt
	}
	return m
}

// TestInfo: every tool's Info has the tool's name, description and a JSON
// Schema equal to the tool's own, as a model would get it.
func TestInfo(t *testing.T) {
	ctx := context.Background()
	set := tools.New(nil, tools.Options{})
	for _, ts := range [][]tool.BaseTool{sandboxeino.Tools(nil, tools.Options{}), sandboxeino.MultimodalTools(nil, tools.Options{})} {
		require.Len(t, ts, len(toolNames))
		for i, bt := range ts {
			info, err := bt.Info(ctx)
			require.NoError(t, err)
			assert.Equal(t, toolNames[i], info.Name)
			assert.Equal(t, set[i].Description, info.Desc)
			js, err := info.ToJSONSchema()
			require.NoError(t, err)
			got, err := json.Marshal(js)
			require.NoError(t, err)
			assert.JSONEq(t, string(set[i].InputSchema), string(got), info.Name)
		}
	}
	info, err := sandboxeino.Tools(nil, tools.Options{})[6].Info(ctx)
	require.NoError(t, err)
	js, err := info.ToJSONSchema()
	require.NoError(t, err)
	assert.Equal(t, []string{"command"}, js.Required)
	cmd, ok := js.Properties.Get("command")
	require.True(t, ok)
	assert.Equal(t, "string", cmd.Type)
}

// TestInvokableRun calls the tools with JSON strings, as Eino's ToolsNode
// does, on a real sandbox.
func TestInvokableRun(t *testing.T) {
	ctx := sandboxtest.Context(t)
	ts := byName(t, ctx, sandboxeino.Tools(sandboxtest.Busybox(t), tools.Options{}))
	run := func(name, args string) string {
		t.Helper()
		it, ok := ts[name].(tool.InvokableTool)
		require.True(t, ok, "%s is %T", name, ts[name])
		out, err := it.InvokableRun(ctx, args)
		require.NoError(t, err, name)
		return out
	}
	assert.Equal(t, "hi\n\n[Command failed with exit code 3]", run("execute", `{"command": "echo hi; exit 3"}`))
	assert.Equal(t, "Updated file /workspace/src/a.txt", run("write_file", `{"file_path": "src/a.txt", "content": "alpha\nbeta gamma\n"}`))
	assert.Equal(t, "1  alpha\n2  beta gamma", run("read_file", `{"file_path": "/workspace/src/a.txt"}`))
	assert.Equal(t, "/workspace/src/a.txt:\n  2: beta gamma", run("grep", `{"pattern": "gamma", "output_mode": "content"}`))
	assert.Equal(t, "['/workspace/src/a.txt']", run("ls", `{"path": "src"}`))

	// Failures are the string the model reads, never an error.
	assert.Equal(t, "Error: Path traversal not allowed: ../etc/passwd", run("read_file", `{"file_path": "../etc/passwd"}`))
	assert.Contains(t, run("read_file", `{"file_path": "nope.txt"}`), "nope.txt")
	assert.Contains(t, run("ls", `{"path": 5}`), "Error: invalid arguments for ls")
	assert.Contains(t, run("execute", ``), "Error: invalid arguments for execute")
	assert.Contains(t, run("execute", `not json`), "Error: invalid arguments for execute")
}

// TestToolNode runs tool calls through Eino's own ToolsNode, from an
// assistant message as a chat model would produce it.
func TestToolNode(t *testing.T) {
	ctx := sandboxtest.Context(t)
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               sandboxeino.Tools(sandboxtest.Busybox(t), tools.Options{}),
		ExecuteSequentially: true, // the read depends on the write
	})
	require.NoError(t, err)
	msgs, err := node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{
		toolCall("c1", "write_file", `{"file_path": "notes.md", "content": "# Notes\nsandbox\n"}`),
		toolCall("c2", "read_file", `{"file_path": "notes.md", "limit": 1}`),
		toolCall("c3", "grep", `{"pattern": "sandbox"}`),
		toolCall("c4", "execute", `{"command": "wc -l notes.md"}`),
		toolCall("c5", "edit_file", `{"file_path": "notes.md", "old_string": "absent", "new_string": "x"}`),
		toolCall("c6", "glob", `{"pattern": "*.md"}`),
		toolCall("c7", "delete", `{"file_path": "notes.md"}`),
		toolCall("c8", "ls", `{"path": "/workspace"}`),
	}))
	require.NoError(t, err, "a failing tool must not fail the node")
	want := []struct{ name, content string }{
		{"write_file", "Updated file /workspace/notes.md"},
		{"read_file", "1  # Notes\n\n[Read 1 line (lines 1-1 of 2 total). 1 line remaining from offset 1.]"},
		{"grep", "/workspace/notes.md"},
		{"execute", "2 notes.md\n\n[Command succeeded with exit code 0]"},
		{"edit_file", "Error: String not found in file: 'absent'"},
		{"glob", "['/workspace/notes.md']"},
		{"delete", "Deleted /workspace/notes.md"},
		{"ls", "No files found"},
	}
	require.Len(t, msgs, len(want))
	for i, m := range msgs {
		assert.Equal(t, schema.Tool, m.Role)
		assert.Equal(t, want[i].name, m.ToolName)
		assert.Equal(t, "c"+string(rune('1'+i)), m.ToolCallID)
		assert.Equal(t, want[i].content, m.Content, want[i].name)
	}

	// In parallel (the default), too.
	node, err = compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: sandboxeino.Tools(sandboxtest.Busybox(t), tools.Options{})})
	require.NoError(t, err)
	msgs, err = node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{
		toolCall("a", "execute", `{"command": "echo one"}`),
		toolCall("b", "execute", `{"command": "echo two"}`),
		toolCall("c", "read_file", `{"file_path": "/etc/hostname/.."}`),
	}))
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	assert.Equal(t, "one\n\n[Command succeeded with exit code 0]", msgs[0].Content)
	assert.Equal(t, "two\n\n[Command succeeded with exit code 0]", msgs[1].Content)
	assert.Equal(t, "Error: Path traversal not allowed: /etc/hostname/..", msgs[2].Content)
}

// scriptedModel is a ToolCallingChatModel that answers with the given
// messages in turn, and records the tools it was given and the messages it
// got.
type scriptedModel struct {
	mu       sync.Mutex
	answers  []*schema.Message
	tools    []*schema.ToolInfo
	received [][]*schema.Message
}

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.received = append(m.received, input)
	if len(m.answers) == 0 {
		return nil, errors.New("no more answers")
	}
	a := m.answers[0]
	m.answers = m.answers[1:]
	return a, nil
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	a, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{a}), nil
}

func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = tools
	return m, nil
}

// TestReactAgent runs the tools from Eino's ReAct agent, with a scripted
// model in place of an LLM.
func TestReactAgent(t *testing.T) {
	ctx := sandboxtest.Context(t)
	m := &scriptedModel{answers: []*schema.Message{
		schema.AssistantMessage("", []schema.ToolCall{{ID: "1", Type: "function",
			Function: schema.FunctionCall{Name: "write_file", Arguments: `{"file_path": "x.sh", "content": "echo from x\n"}`}}}),
		schema.AssistantMessage("", []schema.ToolCall{{ID: "2", Type: "function",
			Function: schema.FunctionCall{Name: "execute", Arguments: `{"command": "sh x.sh"}`}}}),
		schema.AssistantMessage("it printed: from x", nil),
	}}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: m,
		ToolsConfig:      compose.ToolsNodeConfig{Tools: sandboxeino.Tools(sandboxtest.Busybox(t), tools.Options{})},
	})
	require.NoError(t, err)
	out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("run x")})
	require.NoError(t, err)
	assert.Equal(t, "it printed: from x", out.Content)

	var names []string
	for _, info := range m.tools {
		names = append(names, info.Name)
	}
	assert.Equal(t, toolNames, names, "the model was given every tool's Info")
	require.Len(t, m.received, 3)
	last := m.received[2]
	require.GreaterOrEqual(t, len(last), 4)
	assert.Equal(t, "Updated file /workspace/x.sh", last[len(last)-3].Content)
	assert.Equal(t, schema.Tool, last[len(last)-1].Role)
	assert.Equal(t, "from x\n\n[Command succeeded with exit code 0]", last[len(last)-1].Content)
}

// TestMultimodal: read_file of an image reaches the model as an image
// part of the tool message; the text-only tools say it is not shown.
func TestMultimodal(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	_, err := sb.Execute(ctx, `printf '\211PNG\r\n\032\n\000\000\000\rIHDR' > pic.png`)
	require.NoError(t, err)
	readPic := schema.AssistantMessage("", []schema.ToolCall{{ID: "r", Type: "function",
		Function: schema.FunctionCall{Name: "read_file", Arguments: `{"file_path": "pic.png"}`}}})

	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: sandboxeino.MultimodalTools(sb, tools.Options{})})
	require.NoError(t, err)
	msgs, err := node.Invoke(ctx, readPic)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	parts := msgs[0].UserInputMultiContent
	require.Len(t, parts, 2)
	assert.Equal(t, schema.ChatMessagePartTypeText, parts[0].Type)
	assert.Equal(t, "/workspace/pic.png is an image (image/png, 16 bytes); its content is attached as base64 data.", parts[0].Text)
	assert.Equal(t, schema.ChatMessagePartTypeImageURL, parts[1].Type)
	require.NotNil(t, parts[1].Image)
	assert.Equal(t, "image/png", parts[1].Image.MIMEType)
	require.NotNil(t, parts[1].Image.Base64Data)
	data, err := base64.StdEncoding.DecodeString(*parts[1].Image.Base64Data)
	require.NoError(t, err)
	assert.Equal(t, png, string(data))

	// Other results are one text part; a failure too.
	msgs, err = node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{{ID: "x", Type: "function",
		Function: schema.FunctionCall{Name: "execute", Arguments: `{"command": "exit 2"}`}}}))
	require.NoError(t, err)
	require.Len(t, msgs[0].UserInputMultiContent, 1)
	assert.Equal(t, "\n[Command failed with exit code 2]", msgs[0].UserInputMultiContent[0].Text)

	node, err = compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: sandboxeino.Tools(sb, tools.Options{})})
	require.NoError(t, err)
	msgs, err = node.Invoke(ctx, readPic)
	require.NoError(t, err)
	assert.Equal(t, "/workspace/pic.png is an image (image/png, 16 bytes); its content cannot be shown (this tool returns text only).", msgs[0].Content)
}

func TestToolResult(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("%PDF-1.4"))
	r := sandboxeino.ToolResult(tools.Result{Text: "a pdf", Media: &tools.Media{Type: "file", MIMEType: "application/pdf", Data: b64}})
	require.Len(t, r.Parts, 2)
	assert.Equal(t, schema.ToolPartTypeFile, r.Parts[1].Type)
	assert.Equal(t, "application/pdf", r.Parts[1].File.MIMEType)
	assert.Equal(t, b64, *r.Parts[1].File.Base64Data)
	for kind, typ := range map[string]schema.ToolPartType{"audio": schema.ToolPartTypeAudio, "video": schema.ToolPartTypeVideo} {
		r = sandboxeino.ToolResult(tools.Result{Media: &tools.Media{Type: kind, MIMEType: "x/y", Data: b64}})
		require.Len(t, r.Parts, 1, "media only: no empty text part")
		assert.Equal(t, typ, r.Parts[0].Type)
		_, err := r.ToMessageInputParts()
		assert.NoError(t, err)
	}
	assert.Equal(t, []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: ""}}, sandboxeino.ToolResult(tools.Result{}).Parts)
}

// TestToolNodeEvictsUnderCallID: through Eino's ToolsNode, a result too
// large for the model is evicted to a file named after the tool call's
// ID, which the model reads back with read_file.
func TestToolNodeEvictsUnderCallID(t *testing.T) {
	t.Parallel()
	ctx := sandboxtest.Context(t)
	node, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               sandboxeino.Tools(sandboxtest.Busybox(t), tools.Options{}),
		ExecuteSequentially: true, // the read needs the evicted file
	})
	require.NoError(t, err)
	msgs, err := node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{
		toolCall("call_e1", "execute", `{"command": "yes 0123456789 | head -n 9000; echo LAST"}`), // 99,005 bytes: over 80,000
		toolCall("call_e2", "read_file", `{"file_path": "/large_tool_results/call_e1", "offset": 9000, "limit": 1}`),
	}))
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "call_e1", msgs[0].ToolCallID)
	assert.Contains(t, msgs[0].Content, "Tool result too large, the result of this tool call call_e1 was saved in the filesystem at this path: /large_tool_results/call_e1\n")
	assert.Contains(t, msgs[1].Content, "9001  LAST")
}

// toolCall is a chat model's call of tool name with args, as ID id.
func toolCall(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}
