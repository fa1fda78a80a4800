// Command sandbox-mcp is an MCP server that gives an agent a Docker
// sandbox: the tools ls, read_file, write_file, edit_file, glob, grep,
// execute and delete, working in a container, and with -exec-tools the
// session tools exec_command, write_stdin, list_sessions and kill_session.
//
//	sandbox-mcp [flags]                                  # stdio: one sandbox for the process
//	sandbox-mcp -transport http -addr 127.0.0.1:8080     # streamable HTTP at /mcp: one sandbox per session
//
// Over stdio the sandbox is created at start and removed on every way out:
// the client disconnects (stdin ends, or stdout breaks), sends what is not
// JSON-RPC, or the process gets SIGINT, SIGTERM or SIGHUP. Over HTTP each
// MCP session gets its own sandbox on its first tool call, removed when the
// session ends, after -idle-timeout without a request, or at shutdown
// (SIGINT, SIGTERM, SIGHUP); at most -max-sessions sessions are open at
// once. The log goes to stderr; stdout belongs to the stdio transport. A
// closed stderr is no reason to stop: SIGPIPE is ignored and the log is
// dropped.
//
// -engine docker is the default (the Docker API at DOCKER_HOST, Podman's
// socket included); this binary has Docker only. The k8s module's
// k8s/cmd/sandbox-mcp is the same command with -engine kubernetes
// (-kubeconfig, -namespace, -helper-repo); there the Docker-only flags
// (-network other than none, -pull other than missing) are refused with
// sandbox.ErrInvalidOption when the sandbox is made.
package main

import (
	"os"

	"github.com/dockersandbox/sandbox/internal/engineflag"
	"github.com/dockersandbox/sandbox/mcp/mcpcmd"
)

func main() { mcpcmd.Main(engineflag.ForCommand("sandbox-mcp"), os.Args[1:]) }
