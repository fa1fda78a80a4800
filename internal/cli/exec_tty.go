package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dockersandbox/sandbox"
	"golang.org/x/term"
)

// interactiveShell is what exec -it runs without a command: bash where the
// image has it, else sh.
const interactiveShell = "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi"

// errNotTerminal: -t with a stdin that is not a terminal.
var errNotTerminal = errors.New("-t needs a terminal on stdin (it is not one); use -i alone to stream input without a terminal")

// runOnTerminal runs c on a terminal the size of this process's terminal
// (stdin): with input, the terminal is put in raw mode, so that every key
// (Ctrl-C as the byte 0x03) goes to the command, and restored on every way
// out; a resize of the window (SIGWINCH) resizes the command's terminal.
// Without input (-t alone), keys stay with this terminal: Ctrl-C ends this
// process, which kills the command.
func runOnTerminal(ctx context.Context, c *sandbox.Cmd, input bool) error {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return errNotTerminal
	}
	cols, rows, sizeErr := term.GetSize(fd)
	if sizeErr != nil || rows <= 0 || cols <= 0 {
		rows, cols = 24, 80
	}
	c.TTY = &sandbox.Winsize{Rows: rows, Cols: cols}
	c.Stdout, c.Stderr = os.Stdout, nil
	if t := os.Getenv("TERM"); t != "" && !hasEnv(c.Env, "TERM") {
		c.Env = append([]string{"TERM=" + t}, c.Env...)
	}
	if input {
		c.Stdin = os.Stdin
		state, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, state) }()
	}
	if err := c.Start(); err != nil {
		return err
	}
	stop := forwardResizes(ctx, fd, c)
	defer stop()
	err := c.Wait()
	var ee *sandbox.ExitError
	if err != nil && !errors.As(err, &ee) {
		// The session broke off where the cursor was: the error goes on a
		// line of its own.
		fmt.Fprint(os.Stderr, "\r\n")
	}
	return err
}

// resizeTo sizes c's terminal as the terminal fd is now.
func resizeTo(ctx context.Context, fd int, c *sandbox.Cmd) {
	cols, rows, err := term.GetSize(fd)
	if err == nil && rows > 0 && cols > 0 {
		_ = c.Resize(ctx, rows, cols)
	}
}

// hasEnv reports whether env sets key.
func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}
