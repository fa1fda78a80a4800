// Command sandbox manages sandboxes from the shell.
//
//	sandbox create [flags]                 create a sandbox, print its ID
//	sandbox exec [flags] ID -- COMMAND...  run a command, streaming its output
//	sandbox cp SRC DST                     copy a file in (DST is ID:PATH) or out (SRC is ID:PATH)
//	sandbox ls [-json]                     list the library's sandboxes
//	sandbox rm ID...                       remove sandboxes
//	sandbox prune [flags]                  remove old or orphaned sandboxes
//	sandbox mcp [flags]                    run the MCP server (the sandbox-mcp command)
//
// Exit status: 0 on success, 1 on failure, 2 on bad usage; exec exits with
// the command's status (124 when it timed out).
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
  cp SRC DST                     copy a file in (DST is ID:PATH) or out (SRC is ID:PATH; DST - is stdout)
  ls [-json]                     list the library's sandboxes
  rm ID...                       remove sandboxes
  prune [flags]                  remove old or orphaned sandboxes
  mcp [flags]                    run the MCP server (needs sandbox-mcp on PATH)

Run "sandbox <command> -h" for a command's flags.`

// errUsage marks a usage error (exit status 2).
var errUsage = errors.New("usage")

// exitError carries a command's exit status out of exec.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

var commands = map[string]func(ctx context.Context, args []string) error{
	"create": create,
	"exec":   execCmd,
	"cp":     cp,
	"ls":     ls,
	"rm":     rm,
	"prune":  prune,
	"mcp":    mcp,
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	run, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[2:])
	stop()
	os.Exit(status(err))
}

// status maps an error to the exit status.
func status(err error) int {
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		if !errors.Is(err, flag.ErrHelp) && err.Error() != errUsage.Error() {
			fmt.Fprintln(os.Stderr, "sandbox:", err)
		}
		return 2
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "sandbox") {
		msg = "sandbox: " + msg
	}
	fmt.Fprintln(os.Stderr, msg)
	return 1
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sandbox %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, turning failures into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
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

func (m *multiFlag) String() string     { return fmt.Sprint(*m) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
