package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
	"golang.org/x/term"
)

func execCmd(ctx context.Context, args []string) error {
	fs := newFlags("exec", "[flags] ID [-- COMMAND...]  (-it ID: an interactive shell)")
	timeout := fs.Duration("timeout", 0, "kill the command after this long (0: never)")
	dir := fs.String("w", "", "directory to run in (relative to the working dir)")
	user := fs.String("u", "", "user to run as")
	stdin := fs.Bool("i", false, "pass this process's stdin to the command")
	tty := fs.Bool("t", false, "run the command on a terminal the size of this one (stdin must be a terminal); with -i, keys go to the command")
	it := fs.Bool("it", false, internalPrefix+"-i -t")
	ti := fs.Bool("ti", false, internalPrefix+"-t -i")
	asJSON := fs.Bool("json", false, `print {"output", "exit_code", "truncated", "timed_out", "oom_killed"} as JSON instead of streaming`)
	choice := engineFlags(fs)
	var env multiFlag
	fs.Var(&env, "e", "KEY=value (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *it || *ti {
		*stdin, *tty = true, true
	}
	rest := fs.Args()
	if len(rest) < 1 || (len(rest) < 2 && !*tty) {
		return fmt.Errorf("%w: exec needs an ID and a command", errUsage)
	}
	id, command := rest[0], rest[1:]
	if len(command) > 0 && command[0] == "--" {
		command = command[1:]
	}
	if len(command) == 0 && !*tty {
		return fmt.Errorf("%w: exec needs a command", errUsage)
	}
	if *tty && *asJSON {
		return fmt.Errorf("%w: -t and -json do not go together", errUsage)
	}
	if *tty && !term.IsTerminal(int(os.Stdin.Fd())) {
		return errNotTerminal
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	sb, err := attach(ctx, eng, id, sandbox.WithAutoRemove(false))
	if err != nil {
		return err
	}
	line := strings.Join(command, " ")
	if line == "" {
		line = interactiveShell
	}
	if *asJSON {
		opts := []sandbox.ExecOption{sandbox.ExecTimeout(*timeout), sandbox.ExecDir(*dir), sandbox.ExecUser(*user), sandbox.ExecEnv(env...)}
		resp, err := sb.Execute(ctx, line, opts...)
		if err != nil {
			return err
		}
		if err := printJSON(os.Stdout, map[string]any{
			"output": resp.Output, "exit_code": resp.ExitCode, "truncated": resp.Truncated,
			"timed_out": resp.TimedOut, "oom_killed": resp.OOMKilled,
		}); err != nil {
			return err
		}
		return exitStatus(resp.ExitCode)
	}
	c := sb.Command(ctx, line)
	c.Stdout, c.Stderr, c.Env, c.Dir, c.User, c.Timeout = os.Stdout, os.Stderr, env, *dir, *user, *timeout
	if *tty {
		err = runOnTerminal(ctx, c, *stdin)
	} else {
		if *stdin {
			c.Stdin = os.Stdin
		}
		err = c.Run()
	}
	var ee *sandbox.ExitError
	if errors.As(err, &ee) {
		if ee.TimedOut() {
			fmt.Fprintf(os.Stderr, "sandbox exec: timed out after %v\n", timeout.Round(time.Millisecond))
		}
		return exitError{ee.ExitCode()}
	}
	return err
}

func exitStatus(code int) error {
	if code == 0 {
		return nil
	}
	return exitError{code}
}
