package sandboxeino

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/eino-contrib/jsonschema"
)

// Tools returns the tools of tools.New(sb, opts) as Eino invokable tools
// with text results.
func Tools(sb tools.Sandbox, opts tools.Options) []tool.BaseTool {
	set := tools.New(sb, opts)
	out := make([]tool.BaseTool, len(set))
	for i, t := range set {
		out[i] = NewTool(t)
	}
	return out
}

// MultimodalTools returns the tools of tools.New(sb, opts) as Eino
// enhanced invokable tools, whose results carry media as parts.
func MultimodalTools(sb tools.Sandbox, opts tools.Options) []tool.BaseTool {
	set := tools.New(sb, opts)
	out := make([]tool.BaseTool, len(set))
	for i, t := range set {
		out[i] = NewMultimodalTool(t)
	}
	return out
}

// NewTool adapts one tool of package tools to Eino's InvokableTool.
func NewTool(t tools.Tool) tool.InvokableTool {
	return &textTool{base: newBase(t)}
}

// NewMultimodalTool adapts one tool of package tools to Eino's
// EnhancedInvokableTool.
func NewMultimodalTool(t tools.Tool) tool.EnhancedInvokableTool {
	return &multimodalTool{base: newBase(t)}
}

// base is what both kinds of tool share: the tool and its Eino info.
type base struct {
	t    tools.Tool
	info *schema.ToolInfo
	err  error // from converting the schema, returned by Info
}

func newBase(t tools.Tool) base {
	b := base{t: t}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.InputSchema, &s); err != nil {
		b.err = fmt.Errorf("sandboxeino: schema of tool %s: %w", t.Name, err)
		return b
	}
	b.info = &schema.ToolInfo{Name: t.Name, Desc: t.Description, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&s)}
	return b
}

// Info returns the tool's name, description and JSON Schema.
func (b *base) Info(context.Context) (*schema.ToolInfo, error) {
	return b.info, b.err
}

// call runs the tool on the model's JSON arguments ("{}" when empty). A
// result too large for the model is evicted to a file named after the
// tool call's ID (compose.GetToolCallID) when Eino's ToolsNode gives one.
func (b *base) call(ctx context.Context, args string) tools.Result {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if id := compose.GetToolCallID(ctx); id != "" {
		ctx = tools.WithCallID(ctx, id)
	}
	return b.t.Call(ctx, json.RawMessage(args))
}

type textTool struct{ base }

// InvokableRun runs the tool and returns the text the model reads; a
// failure the tool reports is that text too, with a nil error.
func (t *textTool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	return t.call(ctx, argumentsInJSON).TextOnly(), nil
}

type multimodalTool struct{ base }

// InvokableRun runs the tool and returns its text, and the file that
// read_file returned as media, as parts; a failure the tool reports is a
// text part too, with a nil error.
func (t *multimodalTool) InvokableRun(ctx context.Context, arg *schema.ToolArgument, _ ...tool.Option) (*schema.ToolResult, error) {
	var args string
	if arg != nil {
		args = arg.Text
	}
	return ToolResult(t.call(ctx, args)), nil
}

// ToolResult converts r to Eino's multimodal form: a text part, then, for
// media, an image, audio, video or file part with the base64 data.
func ToolResult(r tools.Result) *schema.ToolResult {
	res := &schema.ToolResult{}
	if r.Text != "" || r.Media == nil {
		res.Parts = append(res.Parts, schema.ToolOutputPart{Type: schema.ToolPartTypeText, Text: r.Text})
	}
	if m := r.Media; m != nil {
		data := m.Data
		common := schema.MessagePartCommon{Base64Data: &data, MIMEType: m.MIMEType}
		part := schema.ToolOutputPart{Type: schema.ToolPartType(m.Type)}
		switch m.Type {
		case "image":
			part.Image = &schema.ToolOutputImage{MessagePartCommon: common}
		case "audio":
			part.Audio = &schema.ToolOutputAudio{MessagePartCommon: common}
		case "video":
			part.Video = &schema.ToolOutputVideo{MessagePartCommon: common}
		default:
			part.Type = schema.ToolPartTypeFile
			part.File = &schema.ToolOutputFile{MessagePartCommon: common}
		}
		res.Parts = append(res.Parts, part)
	}
	return res
}
