// Package sandboxmcp serves the sandbox tools (package
// github.com/dockersandbox/sandbox/tools: ls, read_file, write_file,
// edit_file, glob, grep, execute, delete) as an MCP server, on the official
// Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// Two transports, two sandbox lifecycles:
//
//   - Stdio ([Serve], [ServeStdio]): one sandbox for the whole connection.
//     It is created before the server answers its first message and
//     removed when the client disconnects (stdin closes) or the context
//     ends (the command cancels it on SIGINT and SIGTERM).
//   - Streamable HTTP ([HTTPHandler]): one sandbox per MCP session. It is
//     created on the session's first tool call (listing tools costs no
//     container) and removed when the session ends: the client deletes
//     it (HTTP DELETE), the client sends nothing for [Config.IdleTimeout]
//     (a call in progress counts as activity), or the handler is closed.
//     A client that never sends DELETE keeps its sandbox until then.
//
// Both transports accept the same protocol versions ([ProtocolVersions]),
// and every tool carries MCP annotations ([Annotations]).
//
// [AddTools] registers the tools of one sandbox on any *mcp.Server, and
// [CallToolResult] converts a tool result to its MCP form; they are the
// building blocks for other setups.
//
// The command in cmd/sandbox-mcp wraps all this with flags.
package sandboxmcp
