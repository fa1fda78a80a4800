// Package cli is the body of the sandbox command (cmd/sandbox, and the
// k8s module's k8s/cmd/sandbox, which adds the Kubernetes engine).
package cli

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

	"github.com/dockersandbox/sandbox/internal/engineflag"
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
  egress [flags] ID              serve the egress of a sandbox made with create -egress-allow until interrupted
  stats [flags] ID               print a sandbox's CPU, memory, processes, network and disk use (-watch: until interrupted)

Every command that prints data takes -json (snake_case keys); every command
but mcp takes -engine docker (default; Podman through DOCKER_HOST) or another
engine the binary has (the k8s module's sandbox: kubernetes).
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
	"egress":       egressCmd,
	"stats":        stats,
}

// Config is what a binary's main gives Main.
type Config struct {
	// Engines are the engines of the -engine flag (engineflag.ForCommand
	// for the core module's binary; the k8s module's adds Kubernetes).
	Engines *engineflag.Set
	// MCPInstall is the shell command that installs the sandbox-mcp that
	// "sandbox mcp" runs, for its hint when sandbox-mcp is not on PATH
	// (default: the mcp module's).
	MCPInstall string
}

// cfg is the Config of this process (Main sets it once).
var cfg Config

// Main runs the command line args (without the program name) and exits
// with its status: the body of the sandbox command.
func Main(c Config, args []string) {
	cfg = c
	if cfg.Engines == nil {
		cfg.Engines = engineflag.ForCommand("sandbox")
	}
	if cfg.MCPInstall == "" {
		cfg.MCPInstall = mcpInstall
	}
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	name := args[0]
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
	err := run(ctx, args[1:])
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
