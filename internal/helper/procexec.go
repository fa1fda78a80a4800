package helper

import (
	"fmt"
	"os"
	"syscall"
)

// ProcExecMode is the argument (after the program name) that runs the
// helper as the first stage of a managed process: see ProcExec.
const ProcExecMode = "procexec"

// ProcExec makes the process a child subreaper and replaces it with argv.
// The subreaper setting survives execve, so the process's shell itself
// collects its orphans: everything it starts stays its descendant however
// it detaches (setsid, double fork) while it runs, and a tree kill finds
// it. It costs no process of its own. It returns only when exec failed.
func ProcExec(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "sandbox-helper: procexec without a command")
		return 127
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "sandbox-helper: subreaper:", errno)
		return 127
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "sandbox-helper: %s: %v\n", argv[0], err)
	return 127
}
