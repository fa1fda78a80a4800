package sandboxmcp

import (
	"context"

	"github.com/dockersandbox/sandbox/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddExecTools registers the session tools of tools.NewExec(sb, opts) on
// server (exec_command, write_stdin, list_sessions, kill_session), as
// AddTools registers the file tools: with their own schemas and
// annotations, arguments checked by the tools. exec_command and
// write_stdin are annotated as reaching the open world.
func AddExecTools(server *mcp.Server, sb tools.ProcessSandbox, opts tools.Options) {
	addExecTools(server, sb, opts, true)
}

// addExecTools is AddExecTools; networked says whether the sandbox has a
// network.
func addExecTools(server *mcp.Server, sb tools.ProcessSandbox, opts tools.Options, networked bool) {
	wd := sb.WorkingDir()
	for _, t := range tools.NewExec(sb, opts) {
		server.AddTool(mcpTool(t, networked), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := arguments(req)
			return callToolResult(t.Call(callContext(ctx, req), args), args, wd), nil
		})
	}
}

// execToolSet returns the session tools bound to sb when cfg asks for
// them (Config.ExecTools), none otherwise.
func execToolSet(sb tools.ProcessSandbox, cfg *Config) []tools.Tool {
	if !cfg.ExecTools {
		return nil
	}
	return tools.NewExec(sb, cfg.Tools)
}

// describeExec is a tools.ProcessSandbox that only knows its working
// directory: enough for tools.NewExec to describe the tools, never called.
type describeExec struct {
	tools.ProcessSandbox // nil: calling any other method panics
	wd                   string
}

func (d describeExec) WorkingDir() string { return d.wd }
