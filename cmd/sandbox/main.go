// Command sandbox manages sandboxes from the shell.
//
//	sandbox create [flags]                 create a sandbox, print its ID
//	sandbox exec [flags] ID -- COMMAND...  run a command, streaming its output
//	sandbox exec -it ID [-- COMMAND...]    an interactive shell (or command) on a terminal
//	sandbox cp [flags] SRC DST             copy a file in (DST is ID:PATH) or out (SRC is ID:PATH)
//	sandbox ls [flags]                     list the library's sandboxes
//	sandbox rm [flags] ID...               remove sandboxes
//	sandbox prune [flags]                  remove the sandboxes the filters select
//	sandbox mcp [flags]                    run the MCP server (the sandbox-mcp command)
//	sandbox port-forward [flags] ID [HOSTADDR:]HOSTPORT:PORT  forward a host port into a sandbox until interrupted
//	sandbox stats [-json] [-watch [-interval 1s]] ID  print a sandbox's CPU, memory, processes, network and disk use
//
// Every command that prints data takes -json (or --json); the JSON keys
// are snake_case:
//
//	create -json  {"id": "0123456789ab"}
//	exec -json    {"output": "...", "exit_code": 0, "truncated": false, "timed_out": false, "oom_killed": false}
//	cp -json      {"src": "...", "dst": "...", "bytes": 7}
//	ls -json      [{"id", "name", "image", "state", "created" (RFC 3339), "owner", "labels": {...}}, ...]
//	rm -json      ["0123456789ab", ...]  (the IDs removed)
//	prune -json   ["0123456789ab", ...]  (the IDs removed)
//	port-forward -json  {"id", "host_addr", "port"} (once listening)
//	stats -json   {"id", "read", "cpu_ns", "cpu_percent", "memory_bytes", ...} (one line per sample)
//
// ls and prune take the same filters, which combine with AND: -owner,
// -label key=value (repeatable), -older-than DURATION, -dead-owners;
// prune needs one of them, or -all. Sizes take units: -memory 512m, 2g.
//
// Every command but mcp takes -engine: docker (the default: the Docker API
// at DOCKER_HOST, a Podman socket included). This binary has Docker only;
// the k8s module's k8s/cmd/sandbox is the same command with -engine
// kubernetes too (-kubeconfig, -namespace, -helper-image). Docker-only
// flags (-network other than none, -pull other than missing) are refused
// on another engine.
//
// Exit status: 0 on success (and for -h), 1 on failure, 2 on bad usage;
// exec exits with the command's status (124 when it timed out; exec -it
// too, the terminal restored on every way out). An error
// is printed once, on stderr.
package main

import (
	"os"

	"github.com/dockersandbox/sandbox/internal/cli"
)

func main() { cli.Main(cli.Config{}, os.Args[1:]) }
