package sandboxgenkit

import (
	"encoding/json"
	"fmt"

	"github.com/dockersandbox/sandbox/tools"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// DefineTools registers the tools of tools.New(sb, opts) on g and returns
// them, in the order of tools.New. Like every genkit.Define function, it
// panics if a tool of the same name is already registered on g.
func DefineTools(g *genkit.Genkit, sb tools.Sandbox, opts tools.Options) []ai.Tool {
	set := tools.New(sb, opts)
	out := make([]ai.Tool, len(set))
	for i, t := range set {
		out[i] = genkit.DefineMultipartTool(g, t.Name, t.Description, toolFunc(t), ai.WithInputSchema(inputSchema(t)))
	}
	return out
}

// NewTools returns the tools of tools.New(sb, opts) unregistered, to pass
// to Generate with ai.WithTools (see [Refs]): Genkit registers them for
// that call only.
func NewTools(sb tools.Sandbox, opts tools.Options) []ai.Tool {
	set := tools.New(sb, opts)
	out := make([]ai.Tool, len(set))
	for i, t := range set {
		out[i] = ai.NewMultipartTool(t.Name, t.Description, toolFunc(t), ai.WithInputSchema(inputSchema(t)))
	}
	return out
}

// Refs returns ts as the tool references ai.WithTools takes.
func Refs(ts []ai.Tool) []ai.ToolRef {
	refs := make([]ai.ToolRef, len(ts))
	for i, t := range ts {
		refs[i] = t
	}
	return refs
}

// inputSchema is t's JSON Schema as Genkit takes it.
func inputSchema(t tools.Tool) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(t.InputSchema, &m); err != nil {
		// The schemas of package tools are constants, checked by its tests.
		panic(fmt.Sprintf("sandboxgenkit: schema of tool %s: %v", t.Name, err))
	}
	return m
}

// toolFunc runs t on the input Genkit decoded and validated.
func toolFunc(t tools.Tool) ai.MultipartToolFunc[any] {
	return func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) {
		args := json.RawMessage("{}")
		if input != nil {
			b, err := json.Marshal(input)
			if err != nil {
				return nil, fmt.Errorf("sandboxgenkit: %s: encoding the input: %w", t.Name, err)
			}
			args = b
		}
		return ToolResponse(t.Call(tc, args)), nil
	}
}

// ToolResponse converts a tool result to Genkit's multipart form: the text
// as the output, and media as a media part with a base64 data: URL.
func ToolResponse(r tools.Result) *ai.MultipartToolResponse {
	resp := &ai.MultipartToolResponse{Output: r.Text}
	if m := r.Media; m != nil {
		resp.Content = []*ai.Part{ai.NewMediaPart(m.MIMEType, "data:"+m.MIMEType+";base64,"+m.Data)}
	}
	return resp
}
