// Command hostilehelper is a test double of the in-container helper that
// speaks the wire protocol badly, on purpose: the tests install it over
// /.dockersandbox/sandbox-helper (as root in the container) to check that
// no helper can hang the host program, grow its memory without bound or
// block another sandbox.
//
// The library starts it as "<helper> serve" or "<helper> call"; what it does
// then is read from the file named by ModeFile, so that one binary serves
// every mode (see modes in behave.go). "<helper> stopper" instead runs the
// attack of a non-root process: it SIGSTOPs every helper exec it sees.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// ModeFile holds the mode, with its arguments ("slow 12").
const ModeFile = "/.dockersandbox/hostile-mode"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "stopper" {
		stopper()
		return
	}
	b, err := os.ReadFile(ModeFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostilehelper: %v\n", err)
		os.Exit(1)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		fmt.Fprintln(os.Stderr, "hostilehelper: empty mode")
		os.Exit(1)
	}
	// Like a process that does not care: the library's closing the
	// connection is no reason to go.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGTERM, syscall.SIGINT)
	h := &helper{mode: fields[0], args: fields[1:], out: os.Stdout}
	if err := h.run(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "hostilehelper %s: %v\n", h.mode, err)
		os.Exit(1)
	}
}
