package sandboxlangchaingo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dockersandbox/sandbox/tools"
	"github.com/tmc/langchaingo/llms"
	lctools "github.com/tmc/langchaingo/tools"
)

// Tool is a sandbox tool as a langchaingo tool.
type Tool struct {
	t      tools.Tool
	params map[string]any // the JSON Schema, decoded
	bare   string         // the one required string argument, if the tool has one
}

var _ lctools.Tool = (*Tool)(nil)

// Tools returns the tools of tools.New(sb, opts) as langchaingo tools.
func Tools(sb tools.Sandbox, opts tools.Options) []lctools.Tool {
	set := tools.New(sb, opts)
	out := make([]lctools.Tool, len(set))
	for i, t := range set {
		out[i] = NewTool(t)
	}
	return out
}

// NewTool adapts one tool of package tools.
func NewTool(t tools.Tool) *Tool {
	lt := &Tool{t: t}
	if err := json.Unmarshal(t.InputSchema, &lt.params); err != nil {
		// The schemas of package tools are constants, checked by its tests.
		panic(fmt.Sprintf("sandboxlangchaingo: schema of tool %s: %v", t.Name, err))
	}
	if req, _ := lt.params["required"].([]any); len(req) == 1 {
		name, _ := req[0].(string)
		props, _ := lt.params["properties"].(map[string]any)
		if p, _ := props[name].(map[string]any); p["type"] == "string" {
			lt.bare = name
		}
	}
	return lt
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.t.Name }

// Description returns the tool's description for a model, followed by the
// form of its input: langchaingo's agents show a model only names and
// descriptions, so this one carries the JSON Schema of the arguments.
func (t *Tool) Description() string {
	s := t.t.Description + "\n\nInput: a JSON object with the arguments, of JSON Schema " + string(t.t.InputSchema)
	if t.bare != "" {
		return s + "; or just the " + t.bare + ", as plain text."
	}
	return s + "."
}

// Call runs the tool on input: the arguments as a JSON object, or, for a
// tool with one required string argument (every tool but write_file and
// edit_file), that argument alone, as plain text or as a JSON string. The
// result is the text the model reads; a failure the tool reports is that
// text too, with a nil error, since an error would end an agent's run.
func (t *Tool) Call(ctx context.Context, input string) (string, error) {
	return t.t.Call(ctx, t.arguments(input)).TextOnly(), nil
}

// arguments turns a Call input into JSON arguments.
func (t *Tool) arguments(input string) json.RawMessage {
	trimmed := strings.TrimSpace(input)
	if trimmed == "" {
		return json.RawMessage("{}")
	}
	arg := trimmed
	var v any
	if json.Unmarshal([]byte(trimmed), &v) == nil {
		switch v := v.(type) {
		case map[string]any:
			return json.RawMessage(trimmed)
		case string:
			arg = v
		}
	}
	if t.bare == "" {
		return json.RawMessage(trimmed) // the tool reports what is wrong
	}
	b, _ := json.Marshal(map[string]string{t.bare: arg})
	return b
}

// Definition returns the tool as a function definition for a langchaingo
// chat model (llms.WithTools): its name, its description (without the
// input note of Description) and its JSON Schema as the parameters.
func (t *Tool) Definition() llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        t.t.Name,
		Description: t.t.Description,
		Parameters:  t.params,
	}}
}

// Definitions returns the definitions of the sandbox tools among ts (other
// tools are left out), for llms.WithTools.
func Definitions(ts []lctools.Tool) []llms.Tool {
	var out []llms.Tool
	for _, lt := range ts {
		if t, ok := lt.(*Tool); ok {
			out = append(out, t.Definition())
		}
	}
	return out
}

// CallTool runs a tool call of a chat model's answer with the tool of ts
// it names, and returns the response to send back in a message of role
// llms.ChatMessageTypeTool. An unknown tool is a response too. A result
// too large for the model is evicted to a file named after call.ID
// (tools.WithCallID).
func CallTool(ctx context.Context, ts []lctools.Tool, call llms.ToolCall) llms.ToolCallResponse {
	resp := llms.ToolCallResponse{ToolCallID: call.ID}
	if call.FunctionCall == nil {
		resp.Content = "Error: the tool call names no function"
		return resp
	}
	resp.Name = call.FunctionCall.Name
	if call.ID != "" { // an evicted result's file is named after it
		ctx = tools.WithCallID(ctx, call.ID)
	}
	for _, t := range ts {
		if t.Name() == resp.Name {
			out, err := t.Call(ctx, call.FunctionCall.Arguments)
			if err != nil {
				out = "Error: " + err.Error()
			}
			resp.Content = out
			return resp
		}
	}
	resp.Content = fmt.Sprintf("Error: %s is not a valid tool, try another one", resp.Name)
	return resp
}
