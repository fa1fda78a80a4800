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

// MetaToolCallID is the _meta key of a tools/call request that may carry
// the model's tool call ID (tools.WithCallID): a result too large for the
// model is saved in the sandbox in a file named after it. Without one the
// server makes an ID for the call, which the model's message gives.
const MetaToolCallID = "com.dockersandbox/toolCallId"

// callContext is ctx with the request's tool call ID, if it has one.
func callContext(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req != nil && req.Params != nil {
		if id, ok := req.Params.Meta[MetaToolCallID].(string); ok && id != "" {
			return tools.WithCallID(ctx, id)
		}
	}
	return ctx
}

// AddTools registers every tool of tools.New(sb, opts) on server, with the
// tool's own JSON Schema and annotations (see Annotations) and without
// validation by the SDK: the tools check their arguments themselves, and
// bad arguments come back as a result with IsError set, which the model
// can read and correct. execute is annotated as reaching the open world:
// AddTools does not know whether sb has a network.
func AddTools(server *mcp.Server, sb tools.Sandbox, opts tools.Options) {
	addTools(server, sb, opts, true)
}

// addTools is AddTools; networked says whether the sandbox has a network.
func addTools(server *mcp.Server, sb tools.Sandbox, opts tools.Options, networked bool) {
	wd := sb.WorkingDir()
	for _, t := range tools.New(sb, opts) {
		server.AddTool(mcpTool(t, networked), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := arguments(req)
			return callToolResult(t.Call(callContext(ctx, req), args), args, wd), nil
		})
	}
}

// mcpTool is the MCP description of t; networked says whether the
// sandbox has a network (execute's openWorldHint).
func mcpTool(t tools.Tool, networked bool) *mcp.Tool {
	a := Annotations(t.Name, networked)
	title := ""
	if a != nil {
		title = a.Title
	}
	return &mcp.Tool{Name: t.Name, Title: title, Description: t.Description, InputSchema: t.InputSchema, Annotations: a}
}

// Annotations returns the MCP annotations of the tool name (nil for a name
// that is not one of the tools): a title; readOnlyHint for ls, read_file,
// glob and grep, which change nothing; destructiveHint for the tools that
// can overwrite or remove what exists (write_file, edit_file, delete,
// execute); idempotentHint where a second identical call changes nothing
// more (write_file, delete, and the read-only ones); openWorldHint only for
// execute, whose commands reach the network unless networked is false
// (network mode "none"): the file tools stay inside the container. The
// session tools (Config.ExecTools): exec_command and write_stdin as
// execute (write_stdin's input drives a running command); list_sessions
// read-only; kill_session destructive and idempotent, in the container.
func Annotations(name string, networked bool) *mcp.ToolAnnotations {
	yes, no := true, false
	a := func(title string, readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
		d, o := &no, &no
		if destructive {
			d = &yes
		}
		if openWorld {
			o = &yes
		}
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: readOnly, DestructiveHint: d, IdempotentHint: idempotent, OpenWorldHint: o}
	}
	switch name {
	case "ls":
		return a("List directory", true, false, true, false)
	case "read_file":
		return a("Read file", true, false, true, false)
	case "write_file":
		return a("Write file", false, true, true, false)
	case "edit_file":
		return a("Edit file", false, true, false, false)
	case "glob":
		return a("Find files by name (glob)", true, false, true, false)
	case "grep":
		return a("Search file contents (grep)", true, false, true, false)
	case "execute":
		return a("Run shell command", false, true, false, networked)
	case "delete":
		return a("Delete file or directory", false, true, true, false)
	case "exec_command":
		return a("Run command in a session", false, true, false, networked)
	case "write_stdin":
		return a("Write to a session / poll its output", false, true, false, networked)
	case "list_sessions":
		return a("List command sessions", true, false, true, false)
	case "kill_session":
		return a("Kill command session", false, true, true, false)
	}
	return nil
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
