package helper

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// BootMode starts a container from a read-only copy of the helper that the
// engine shares with it (on Docker, the port socket's directory): it
// installs the helper at its usual path and runs it as init, so that
// nothing is copied through the engine's archive API before the start.
const BootMode = proto.BootMode

// Boot installs the running executable at dest as Install does (mode 0755,
// through a temporary file renamed into place; the directory made, and run
// beside it, mode 0700, root's), makes workdir (mode 0755) if it is
// missing, then executes dest with argv [dest, args...] in this process:
// PID 1 becomes the helper at its usual path, the container's own file. It
// returns only when that fails, with the exit code, having written why to
// standard output, which the engine reads for the ready line.
func Boot(dest, workdir string, args []string) int {
	err := boot(dest, workdir, args)
	fmt.Fprintln(os.Stdout, "sandbox-helper boot:", err)
	return 1
}

func boot(dest, workdir string, args []string) error {
	if !filepath.IsAbs(dest) || !filepath.IsAbs(workdir) || len(args) == 0 {
		return fmt.Errorf("want an absolute DEST and WORKDIR, and the helper's arguments: %q %q %q", dest, workdir, args)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := install(dest); err != nil {
		return err
	}
	if err := ownDirs("0:0", []string{filepath.Join(filepath.Dir(dest), "run")}); err != nil {
		return err
	}
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		return err
	}
	return syscall.Exec(dest, append([]string{dest}, args...), os.Environ())
}
