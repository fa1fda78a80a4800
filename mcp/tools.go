package sandboxmcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path"

	"github.com/dockersandbox/sandbox/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaExitCode is the _meta key of a tool result that carries the exit
// code of the command the execute tool ran.
const MetaExitCode = "com.dockersandbox/exitCode"

// AddTools registers every tool of tools.New(sb, opts) on server, with the
// tool's own JSON Schema and without validation by the SDK: the tools
// check their arguments themselves, and bad arguments come back as a
// result with IsError set, which the model can read and correct.
func AddTools(server *mcp.Server, sb tools.Sandbox, opts tools.Options) {
	wd := sb.WorkingDir()
	for _, t := range tools.New(sb, opts) {
		server.AddTool(mcpTool(t), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := arguments(req)
			return callToolResult(t.Call(ctx, args), args, wd), nil
		})
	}
}

// mcpTool is the MCP description of t.
func mcpTool(t tools.Tool) *mcp.Tool {
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
}

// arguments returns the raw arguments of req, "{}" when there are none.
func arguments(req *mcp.CallToolRequest) json.RawMessage {
	if req.Params == nil || len(req.Params.Arguments) == 0 || string(req.Params.Arguments) == "null" {
		return json.RawMessage("{}")
	}
	return req.Params.Arguments
}

// CallToolResult converts a tool result to its MCP form: the text as text
// content; media as image or audio content, or, for other kinds (video,
// PDF, any file), as an embedded resource with the bytes as its blob; the
// exit code of a command in _meta under MetaExitCode.
func CallToolResult(r tools.Result) *mcp.CallToolResult {
	return callToolResult(r, nil, "")
}

// callToolResult is CallToolResult; args and wd name the embedded resource
// of a media result after the file it came from.
func callToolResult(r tools.Result, args json.RawMessage, wd string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{}}
	if r.Text != "" || r.Media == nil {
		res.Content = append(res.Content, &mcp.TextContent{Text: r.Text})
	}
	if m := r.Media; m != nil {
		data, err := base64.StdEncoding.DecodeString(m.Data)
		switch {
		case err != nil:
			// Not expected from the tools package; pass the text on as is
			// rather than lose it.
			res.Content = append(res.Content, &mcp.TextContent{Text: m.Data})
		case m.Type == "image":
			res.Content = append(res.Content, &mcp.ImageContent{Data: data, MIMEType: m.MIMEType})
		case m.Type == "audio":
			res.Content = append(res.Content, &mcp.AudioContent{Data: data, MIMEType: m.MIMEType})
		default:
			res.Content = append(res.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI:      resourceURI(args, wd),
				MIMEType: m.MIMEType,
				Blob:     data,
			}})
		}
	}
	if r.ExitCode != nil {
		res.Meta = mcp.Meta{MetaExitCode: *r.ExitCode}
	}
	return res
}

// resourceURI names a file read from the sandbox: file:// and its absolute
// path in the container, taken from the call's arguments.
func resourceURI(args json.RawMessage, wd string) string {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	p, _ := a["file_path"].(string)
	if p == "" {
		p, _ = a["path"].(string)
	}
	if p == "" {
		return "file:///"
	}
	if !path.IsAbs(p) {
		p = path.Join(wd, p)
	}
	return (&url.URL{Scheme: "file", Path: path.Clean(p)}).String()
}
