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
//
// ls and prune take the same filters, which combine with AND: -owner,
// -label key=value (repeatable), -older-than DURATION, -dead-owners;
// prune needs one of them, or -all. Sizes take units: -memory 512m, 2g.
//
// Exit status: 0 on success (and for -h), 1 on failure, 2 on bad usage;
// exec exits with the command's status (124 when it timed out; exec -it
// too, the terminal restored on every way out). An error
// is printed once, on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `usage: sandbox <command> [flags]

commands:
  create [flags]                 create a sandbox and print its ID
  exec [flags] ID -- COMMAND...  run a command in a sandbox, streaming its output
  exec -it ID [-- COMMAND...]    an interactive shell (bash, else sh) or command on a terminal
  cp [flags] SRC DST             copy a file in (DST is ID:PATH) or out (SRC is ID:PATH; DST - is stdout)
  ls [flags]                     list the library's sandboxes (filters: -owner, -label, -older-than, -dead-owners)
  rm [flags] ID...               remove sandboxes
  prune [flags]                  remove the sandboxes the filters select (or -all)
  mcp [flags]                    run the MCP server (needs sandbox-mcp on PATH)
  port-forward [flags] ID [HOSTADDR:]HOSTPORT:PORT
                                 forward a host port (127.0.0.1 by default) to PORT in a sandbox until interrupted

Every command that prints data takes -json (snake_case keys).
Run "sandbox <command> -h" for a command's flags.`

// errUsage marks a usage error (exit status 2).
var errUsage = errors.New("usage")

// exitError carries an exit status out of a command that has printed
// what went wrong already (exec's command status, rm's failures).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

var commands = map[string]func(ctx context.Context, args []string) error{
	"create":       create,
	"exec":         execCmd,
	"cp":           cp,
	"ls":           ls,
	"rm":           rm,
	"prune":        prune,
	"mcp":          mcp,
	"port-forward": portForward,
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	name := os.Args[1]
	switch name {
	case "-h", "-help", "--help", "help":
		fmt.Println(usage)
		os.Exit(0)
	}
	run, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "sandbox: unknown command %q\nRun \"sandbox -h\" for the commands.\n", name)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[2:])
	stop()
	os.Exit(status(name, err))
}

// status prints err once, on stderr, and returns the exit status.
func status(name string, err error) int {
	var ee exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errUsage):
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), errUsage.Error()), ": ")
		fmt.Fprintf(os.Stderr, "sandbox %s: %s\nRun \"sandbox %s -h\" for its flags.\n", name, msg, name)
		return 2
	}
	fmt.Fprintf(os.Stderr, "sandbox %s: %s\n", name, strings.TrimPrefix(err.Error(), "sandbox: "))
	return 1
}

// newFlags returns a flag set that reports errors instead of exiting or
// printing them (status prints each error once).
func newFlags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse sets stdout for -h
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sandbox %s %s\n", name, args)
		printDefaults(fs, fs.Output())
	}
	return fs
}

// internalPrefix starts the usage of a flag meant for tests and the
// command's own use: -h does not show it.
const internalPrefix = "internal: "

// printDefaults is fs.PrintDefaults without the internal flags.
func printDefaults(fs *flag.FlagSet, w io.Writer) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, internalPrefix) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// parse parses flags: -h prints the usage on stdout (flag.ErrHelp, exit
// status 0); a bad flag is a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.Usage()
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
