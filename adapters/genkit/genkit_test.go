package sandboxgenkit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"

	sandboxgenkit "github.com/dockersandbox/sandbox/adapters/genkit"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain builds the test images if needed and fails the run if a test
// leaves a sandbox behind.
func TestMain(m *testing.M) { testenv.Main(m) }

var toolNames = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep", "execute", "delete"}

// TestDefinitions: the registered tools, found by name, carry the tools'
// names, descriptions and JSON Schemas.
func TestDefinitions(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	defined := sandboxgenkit.DefineTools(g, nil, tools.Options{})
	set := tools.New(nil, tools.Options{})
	require.Len(t, defined, len(toolNames))
	for i, name := range toolNames {
		assert.Equal(t, name, defined[i].Name())
		tool := genkit.LookupTool(g, name)
		require.NotNil(t, tool, name)
		def := tool.Definition()
		assert.Equal(t, name, def.Name)
		assert.Equal(t, set[i].Description, def.Description)
		got, err := json.Marshal(def.InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, string(set[i].InputSchema), string(got), name)
	}
	assert.Len(t, genkit.ListTools(g), len(toolNames))
	assert.Panics(t, func() { sandboxgenkit.DefineTools(g, nil, tools.Options{}) }, "one set per *Genkit")
}

// TestRunRaw looks the tools up by name and runs them as Genkit runs a
// model's tool request: input decoded from JSON, validated, then run.
func TestRunRaw(t *testing.T) {
	ctx := sandboxtest.Context(t)
	g := genkit.Init(ctx)
	sandboxgenkit.DefineTools(g, sandboxtest.Busybox(t), tools.Options{})
	run := func(name, input string) any {
		t.Helper()
		var in any
		require.NoError(t, json.Unmarshal([]byte(input), &in))
		out, err := genkit.LookupTool(g, name).RunRaw(ctx, in)
		require.NoError(t, err, name)
		return out
	}
	assert.Equal(t, "hi\n\n[Command failed with exit code 3]", run("execute", `{"command": "echo hi; exit 3"}`))
	assert.Equal(t, "Updated file /workspace/src/a.txt", run("write_file", `{"file_path": "src/a.txt", "content": "alpha\nbeta gamma\n"}`))
	assert.Equal(t, "2  beta gamma", run("read_file", `{"file_path": "/workspace/src/a.txt", "offset": 1}`))
	assert.Equal(t, "/workspace/src/a.txt: 1", run("grep", `{"pattern": "gamma", "output_mode": "count"}`))
	assert.Equal(t, "['/workspace/src/a.txt']", run("ls", `{"path": "src"}`))
	assert.Equal(t, "Successfully replaced 1 instance(s) of the string in '/workspace/src/a.txt'",
		run("edit_file", `{"file_path": "src/a.txt", "old_string": "beta", "new_string": "delta"}`))
	assert.Equal(t, "['/workspace/src/a.txt']", run("glob", `{"pattern": "**/*.txt"}`))
	assert.Equal(t, "Deleted /workspace/src/a.txt", run("delete", `{"file_path": "src/a.txt"}`))

	// A failure the tool reports is the output, not an error.
	assert.Equal(t, "Error: Path traversal not allowed: ../etc/passwd", run("read_file", `{"file_path": "../etc/passwd"}`))
	assert.Contains(t, run("read_file", `{"file_path": "src/a.txt"}`), "src/a.txt")
	assert.Equal(t, "Error: File '/workspace/x' not found",
		run("edit_file", `{"file_path": "x", "old_string": "a", "new_string": "b"}`))

	// Input that breaks the schema is refused by Genkit before the tool runs.
	for _, input := range []any{
		map[string]any{"command": "true", "extra": 1},
		map[string]any{"command": 5},
		map[string]any{},
		map[string]any{"command": "true", "timeout": -1},
	} {
		_, err := genkit.LookupTool(g, "execute").RunRaw(ctx, input)
		var gerr *core.GenkitError
		require.ErrorAs(t, err, &gerr, "%v", input)
		assert.Equal(t, core.INVALID_ARGUMENT, gerr.Status)
		assert.Contains(t, gerr.Message, "did not match expected schema")
	}
}

// scriptedModel defines a model that asks for the tool requests of each
// turn in order, then answers "done"; it records the tool messages it gets
// back and the tools it was offered.
type scriptedModel struct {
	mu       sync.Mutex
	turns    [][]*ai.ToolRequest
	n        int
	offered  []*ai.ToolDefinition
	received []*ai.ToolResponse
}

func (s *scriptedModel) define(g *genkit.Genkit, name string) ai.Model {
	return genkit.DefineModel(g, name, &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true, Media: true}},
		func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.offered = req.Tools
			if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool {
				for _, p := range last.Content {
					if p.IsToolResponse() {
						s.received = append(s.received, p.ToolResponse)
					}
				}
			}
			if s.n == len(s.turns) {
				return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
			}
			var parts []*ai.Part
			for _, tr := range s.turns[s.n] {
				parts = append(parts, ai.NewToolRequestPart(tr))
			}
			s.n++
			return &ai.ModelResponse{Message: ai.NewModelMessage(parts...), FinishReason: ai.FinishReasonStop}, nil
		})
}

// response returns the tool response with ref.
func (s *scriptedModel) response(t *testing.T, ref string) *ai.ToolResponse {
	t.Helper()
	for _, r := range s.received {
		if r.Ref == ref {
			return r
		}
	}
	require.Failf(t, "no tool response", "ref %s", ref)
	return nil
}

func req(ref, name, input string) *ai.ToolRequest {
	var in any
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		panic(err)
	}
	return &ai.ToolRequest{Ref: ref, Name: name, Input: in}
}

// TestGenerate drives the tools through genkit.Generate's own tool loop,
// with a scripted model in place of an LLM.
func TestGenerate(t *testing.T) {
	ctx := sandboxtest.Context(t)
	g := genkit.Init(ctx)
	ts := sandboxgenkit.DefineTools(g, sandboxtest.Busybox(t), tools.Options{})
	m := &scriptedModel{turns: [][]*ai.ToolRequest{
		{req("w", "write_file", `{"file_path": "notes.md", "content": "# Notes\nsandbox\n"}`)},
		{ // in parallel
			req("r", "read_file", `{"file_path": "notes.md", "limit": 1}`),
			req("g", "grep", `{"pattern": "sandbox"}`),
			req("x", "execute", `{"command": "wc -l notes.md; exit 1"}`),
			req("e", "edit_file", `{"file_path": "notes.md", "old_string": "absent", "new_string": "x"}`),
		},
	}}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m.define(g, "test/scripted")), ai.WithPrompt("go"),
		ai.WithTools(sandboxgenkit.Refs(ts)...))
	require.NoError(t, err)
	assert.Equal(t, "done", resp.Text())

	var offered []string
	for _, d := range m.offered {
		offered = append(offered, d.Name)
		assert.Equal(t, "object", d.InputSchema["type"], d.Name)
	}
	assert.ElementsMatch(t, toolNames, offered)
	require.Len(t, m.received, 5)
	for ref, want := range map[string]string{
		"w": "Updated file /workspace/notes.md",
		"r": "1  # Notes\n\n[Read 1 line (lines 1-1 of 2 total). 1 line remaining from offset 1.]",
		"g": "/workspace/notes.md",
		"x": "2 notes.md\n\n[Command failed with exit code 1]",
		"e": "Error: String not found in file: 'absent'",
	} {
		r := m.response(t, ref)
		assert.Equal(t, want, r.Output, ref)
		assert.Empty(t, r.Content, ref)
	}
}

// TestGenerateMedia: read_file of an image reaches the model as a media
// part of the tool response, with dynamic (unregistered) tools.
func TestGenerateMedia(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	_, err := sb.Execute(ctx, `printf '\211PNG\r\n\032\n\000\000\000\rIHDR' > pic.png`)
	require.NoError(t, err)

	g := genkit.Init(ctx)
	m := &scriptedModel{turns: [][]*ai.ToolRequest{{req("p", "read_file", `{"file_path": "pic.png"}`)}}}
	_, err = genkit.Generate(ctx, g, ai.WithModel(m.define(g, "test/scripted")), ai.WithPrompt("look"),
		ai.WithTools(sandboxgenkit.Refs(sandboxgenkit.NewTools(sb, tools.Options{}))...))
	require.NoError(t, err)
	assert.Nil(t, genkit.LookupTool(g, "read_file"), "dynamic tools stay unregistered")
	r := m.response(t, "p")
	assert.Equal(t, "/workspace/pic.png is an image (image/png, 16 bytes); its content is attached as base64 data.", r.Output)
	require.Len(t, r.Content, 1)
	assert.True(t, r.Content[0].IsMedia())
	assert.Equal(t, "image/png", r.Content[0].ContentType)
	assert.Equal(t, "data:image/png;base64,"+base64.StdEncoding.EncodeToString([]byte(png)), r.Content[0].Text)
}
