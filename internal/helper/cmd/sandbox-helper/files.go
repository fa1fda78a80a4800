package main

import (
	"fmt"
	"os"

	"github.com/dockersandbox/sandbox/internal/helper"
)

// fileMode runs install DEST [OWNER [DIR...]], untar DIR or tar PATH
// (args[0] is the mode).
func fileMode(args []string) int {
	if len(args) < 2 || (args[0] != helper.InstallMode && len(args) != 2) {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case helper.InstallMode:
		owner := ""
		if len(args) > 2 {
			owner = args[2]
		}
		return helper.Install(args[1], owner, args[min(len(args), 3):]...)
	case helper.UntarMode:
		return helper.Untar(args[1], os.Stdin, os.Stdout)
	}
	return helper.Tar(args[1], os.Stdout)
}
