package sandboxeino_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/adk"
	fsmw "github.com/cloudwego/eino/adk/middlewares/filesystem"
	"github.com/cloudwego/eino/adk/prebuilt/deep"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/dockersandbox/sandbox"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// turn is one answer of a scripted model: tool calls with the content each
// tool message must have, or (no calls) a final answer.
type turn struct {
	calls  []call
	answer string
	check  func(content string) // instead of the calls' want, when set
}

type call struct {
	name, args string
	want       string // the tool message's content
}

// scriptModel is a model.ToolCallingChatModel that answers with its turns
// in order, and checks the tool message of every call it made as soon as
// one of its inputs carries it (a sub-agent's inputs do not).
type scriptModel struct {
	t       *testing.T
	mu      sync.Mutex
	turns   []turn
	next    int
	pending map[string]call // by call ID, until checked
	checks  map[string]func(string)
	tools   [][]string // tool names of each WithTools
	inputs  [][]*schema.Message
}

func newScript(t *testing.T, turns ...turn) *scriptModel {
	return &scriptModel{t: t, turns: turns, pending: map[string]call{}}
}

func (m *scriptModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inputs = append(m.inputs, input)
	for _, msg := range input {
		if msg.Role != schema.Tool {
			continue
		}
		if c, ok := m.pending[msg.ToolCallID]; ok {
			delete(m.pending, msg.ToolCallID)
			assert.Equal(m.t, c.name, msg.ToolName, "call %s", msg.ToolCallID)
			if check := m.checks[msg.ToolCallID]; check != nil {
				check(msg.Content)
			} else {
				assert.Equal(m.t, c.want, msg.Content, "tool message of %s %s", c.name, c.args)
			}
		}
	}
	if m.next == len(m.turns) {
		return nil, fmt.Errorf("script: no turn %d", m.next)
	}
	tu := m.turns[m.next]
	m.next++
	if len(tu.calls) == 0 {
		return schema.AssistantMessage(tu.answer, nil), nil
	}
	var tcs []schema.ToolCall
	for i, c := range tu.calls {
		id := fmt.Sprintf("t%d.%d", m.next, i)
		m.pending[id] = c
		if tu.check != nil {
			if m.checks == nil {
				m.checks = map[string]func(string){}
			}
			m.checks[id] = tu.check
		}
		tcs = append(tcs, schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: c.name, Arguments: c.args}})
	}
	return schema.AssistantMessage("", tcs), nil
}

func (m *scriptModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	a, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{a}), nil
}

func (m *scriptModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, ti := range tools {
		names = append(names, ti.Name)
	}
	m.tools = append(m.tools, names)
	return m, nil
}

// done checks that every turn was played and every tool message seen.
func (m *scriptModel) done() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	assert.Equal(m.t, len(m.turns), m.next, "turns played")
	assert.Empty(m.t, m.pending, "tool messages never seen")
}

// runWith runs a chat-model agent of model m with middleware mw on "go".
func runWith(ctx context.Context, t *testing.T, m *scriptModel, mw adk.AgentMiddleware) (*schema.Message, error) {
	t.Helper()
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{Name: "a", Description: "a", Model: m, Middlewares: []adk.AgentMiddleware{mw}})
	require.NoError(t, err)
	return run(ctx, agent, "go", false)
}

// run runs agent on query to its end and returns its last message and the
// error of its last event, if any.
func run(ctx context.Context, agent adk.Agent, query string, streaming bool) (*schema.Message, error) {
	it := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, EnableStreaming: streaming}).Query(ctx, query)
	var last *schema.Message
	for {
		ev, ok := it.Next()
		if !ok {
			return last, nil
		}
		if ev.Err != nil {
			return last, ev.Err
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			msg, err := ev.Output.MessageOutput.GetMessage()
			if err != nil {
				return last, err
			}
			last = msg
		}
	}
}

// images runs f on a sandbox of each test image.
func images(t *testing.T, f func(t *testing.T, sb *sandbox.Sandbox)) {
	for _, img := range []string{testenv.BusyboxImage, testenv.DebianImage} {
		t.Run(img[strings.LastIndex(img, "/")+1:], func(t *testing.T) {
			t.Parallel()
			f(t, sandboxtest.New(t, img, sandbox.WithNetworkMode("none")))
		})
	}
}

// fileTurns is a session with every tool of Eino's filesystem middleware,
// as a model would call them, and the tool messages they must give.
func fileTurns() []turn {
	return []turn{
		{calls: []call{{"write_file", `{"file_path": "/workspace/app/main.py", "content": "import os\nprint('hello')\n\nprint('HELLO')\n"}`,
			"Updated file /workspace/app/main.py"}}},
		{calls: []call{
			{"read_file", `{"file_path": "/workspace/app/main.py"}`, "     1\timport os\n     2\tprint('hello')\n     3\t\n     4\tprint('HELLO')"},
			{"read_file", `{"file_path": "/workspace/app/main.py", "offset": 1, "limit": 1}`, "     2\tprint('hello')"},
			{"ls", `{"path": "/workspace"}`, "/workspace/app"},
		}},
		{calls: []call{{"edit_file", `{"file_path": "/workspace/app/main.py", "old_string": "'hello'", "new_string": "'hi'"}`,
			"Successfully replaced the string in '/workspace/app/main.py'"}}},
		{calls: []call{
			{"grep", `{"pattern": "print", "output_mode": "content"}`, "/workspace/app/main.py:2:print('hi')\n/workspace/app/main.py:4:print('HELLO')\n"},
			{"grep", `{"pattern": "print", "path": "/workspace", "glob": "*.py", "output_mode": "count"}`, "2"},
			{"grep", `{"pattern": "hi", "path": "/workspace/app"}`, "/workspace/app/main.py"},
			{"glob", `{"pattern": "**/*.py", "path": "/workspace"}`, "/workspace/app/main.py"},
			{"glob", `{"pattern": "/workspace/app/*.py"}`, "/workspace/app/main.py"},
		}},
		{calls: []call{
			{"execute", `{"command": "cd app && cat main.py | wc -l && echo err >&2"}`, "4\nerr\n"},
			{"execute", `{"command": "exit 3"}`, "\n[Command failed with exit code 3]"},
			{"execute", `{"command": "true"}`, "[Command executed successfully with no output]"},
		}},
		{answer: "done"},
	}
}

// TestFilesystemMiddleware drives the backend through Eino's filesystem
// middleware on a ChatModelAgent, with a scripted model, on both images.
func TestFilesystemMiddleware(t *testing.T) {
	images(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := sandboxtest.Context(t)
		mw, err := fsmw.NewMiddleware(ctx, &fsmw.Config{Backend: sandboxeino.NewBackend(sb)})
		require.NoError(t, err)
		m := newScript(t, fileTurns()...)
		agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
			Name: "coder", Description: "writes code", Model: m, Middlewares: []adk.AgentMiddleware{mw},
		})
		require.NoError(t, err)
		for _, streaming := range []bool{false, true} {
			if err := sb.Delete(ctx, "/workspace/app"); !errors.Is(err, fs.ErrNotExist) {
				require.NoError(t, err)
			}
			m.next = 0
			last, err := run(ctx, agent, "work", streaming)
			require.NoError(t, err, "streaming %v", streaming)
			require.NotNil(t, last)
			assert.Equal(t, "done", last.Content)
			m.done()
		}
		assert.Equal(t, []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute"}, m.tools[0])
		sys := m.inputs[0][0]
		assert.Equal(t, schema.System, sys.Role)
		assert.Contains(t, sys.Content, "# Execute Tool 'execute'", "a shell backend gets the execute prompt")
	})
}

// TestFilesystemMiddlewareErrors: a backend error is the tool's error, so it
// ends the agent's run (Eino's design, InMemoryBackend's too); large
// results are offloaded through the backend's Write.
func TestFilesystemMiddlewareErrors(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	mw, err := fsmw.NewMiddleware(ctx, &fsmw.Config{Backend: sandboxeino.NewBackend(sb), LargeToolResultOffloadingTokenLimit: 100})
	require.NoError(t, err)
	// 11 lines of 41 bytes: over the limit of 100 tokens (400 bytes).
	x := strings.Repeat("x", 34)
	var sample strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&sample, "%d: line%02d%s\n", i, i, x)
	}
	m := newScript(t,
		turn{calls: []call{{"execute", `{"command": "for i in 01 02 03 04 05 06 07 08 09 10 11; do echo line${i}` + x + `; done"}`,
			"Tool result too large, the result of this tool call t1.0 was saved in the filesystem at this path: /large_tool_result/t1.0\n" +
				"You can read the result from the filesystem by using the read_file tool, but make sure to only read part of the result at a time.\n" +
				"You can do this by specifying an offset and limit in the read_file tool call.\nFor example, to read the first 100 lines, you can use the read_file tool with offset=0 and limit=100.\n\n" +
				"Here are the first 10 lines of the result:\n" + sample.String()}}},
		turn{calls: []call{{"read_file", `{"file_path": "/large_tool_result/t1.0", "offset": 9, "limit": 5}`,
			"    10\tline10" + x + "\n    11\tline11" + x}}},
		turn{calls: []call{{"write_file", `{"file_path": "/large_tool_result/t1.0", "content": "again"}`, ""}}},
	)
	_, err = runWith(ctx, t, m, mw)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "write /large_tool_result/t1.0: file already exists")
	assert.Equal(t, 3, m.next)
}

// TestDeepAgent runs Eino's prebuilt deep agent on the backend: the main
// agent plans, hands a task to the general-purpose sub-agent (which writes a
// file through the same backend), then runs it.
func TestDeepAgent(t *testing.T) {
	images(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := sandboxtest.Context(t)
		mw, err := fsmw.NewMiddleware(ctx, &fsmw.Config{Backend: sandboxeino.NewBackend(sb)})
		require.NoError(t, err)
		m := newScript(t,
			// main agent
			turn{calls: []call{{"write_todos", `{"todos": [{"content": "write script", "activeForm": "writing", "status": "in_progress"}]}`,
				`Updated todo list to [{"content":"write script","activeForm":"writing","status":"in_progress"}]`}}},
			turn{calls: []call{{"task", `{"subagent_type": "general-purpose", "description": "write /workspace/s.sh printing 42"}`, "written"}}},
			// the sub-agent
			turn{calls: []call{{"write_file", `{"file_path": "/workspace/s.sh", "content": "echo $((6*7))\n"}`, "Updated file /workspace/s.sh"}}},
			turn{answer: "written"},
			// main agent again
			turn{calls: []call{
				{"execute", `{"command": "sh /workspace/s.sh"}`, "42\n"},
				{"glob", `{"pattern": "*.sh", "path": "/workspace"}`, "/workspace/s.sh"},
			}},
			turn{answer: "42"},
		)
		agent, err := deep.New(ctx, &deep.Config{
			Name: "deep", Description: "a deep agent", ChatModel: m, Middlewares: []adk.AgentMiddleware{mw}, MaxIteration: 10,
		})
		require.NoError(t, err)
		last, err := run(ctx, agent, "make a script that prints 42 and run it", false)
		require.NoError(t, err)
		require.NotNil(t, last)
		assert.Equal(t, "42", last.Content)
		m.done()
		for _, names := range m.tools {
			assert.Subset(t, names, []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute"})
		}
		r, err := sb.Read(ctx, "/workspace/s.sh")
		require.NoError(t, err)
		assert.Equal(t, "echo $((6*7))", r.Content)
	})
}

// TestCaptureOutput: with WithCaptureOutput, a command printing 2 MiB whose
// failing line is last gives the model, through Eino's middleware, that
// line and the file's path, from which read_file pages the whole output;
// a small output is as without it, and leaves no file.
func TestCaptureOutput(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	mw, err := fsmw.NewMiddleware(ctx, &fsmw.Config{Backend: sandboxeino.NewBackend(sb, sandboxeino.WithCaptureOutput("/large_tool_result", 0, 0))})
	require.NoError(t, err)
	const big = `i=0; while [ $i -lt 26215 ]; do printf 'line %074d\n' $i; i=$((i+1)); done; echo 'FAIL: at the very end' >&2; exit 1`
	m := newScript(t,
		turn{calls: []call{{name: "execute", args: fmt.Sprintf(`{"command": %q}`, big)}}, check: func(c string) {
			assert.True(t, strings.HasPrefix(c, "Tool result too large, the result of this tool call t1.0 was saved in the filesystem at this path: /large_tool_result/t1_0\n"), "%.300s", c)
			assert.Contains(t, c, "[Command failed with exit code 1]\nline 0")
			assert.Contains(t, c, "FAIL: at the very end\n")
			assert.Less(t, len(c), 4000)
		}},
		turn{calls: []call{{name: "read_file", args: `{"file_path": "/large_tool_result/t1_0", "offset": 26214, "limit": 5}`}}, check: func(c string) {
			assert.Contains(t, c, "26216\tFAIL: at the very end")
		}},
		turn{calls: []call{{name: "execute", args: `{"command": "echo small"}`, want: "small\n"}}},
		turn{answer: "done"},
	)
	last, err := runWith(ctx, t, m, mw)
	require.NoError(t, err)
	assert.Equal(t, "done", last.Content)
	m.done()
	_, err = sb.Stat(ctx, "/large_tool_result/t3_0")
	assert.ErrorIs(t, err, fs.ErrNotExist, "the small output's file went")
}

// TestCaptureOutputUnwritable: a capture directory the helper cannot write
// gives the output inline; the command runs once.
func TestCaptureOutputUnwritable(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	mw, err := fsmw.NewMiddleware(ctx, &fsmw.Config{Backend: sandboxeino.NewBackend(sb, sandboxeino.WithCaptureOutput("/proc/nope", 0, 0))})
	require.NoError(t, err)
	m := newScript(t,
		turn{calls: []call{{name: "execute", args: `{"command": "echo ran >> /tmp/runs; echo small"}`, want: "small\n"}}},
		turn{answer: "done"},
	)
	last, err := runWith(ctx, t, m, mw)
	require.NoError(t, err)
	assert.Equal(t, "done", last.Content)
	m.done()
	runs, err := sb.FS(ctx).ReadFile("tmp/runs")
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(runs))
}
