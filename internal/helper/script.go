package helper

import (
	"os"

	"golang.org/x/sys/unix"
)

// argvCommandMax is the longest command that runs as sh -c's argument.
// Linux refuses an argument over MAX_ARG_STRLEN (128 KiB) with E2BIG, and
// all arguments and the environment together over a quarter of the stack
// limit (at least 128 KiB): a longer command goes to the shell as a file.
const argvCommandMax = 64 << 10

// scriptBoot is the sh -c argument that runs a long command: the shell
// sources the file that is its descriptor 3, so that $0, $@, the exit
// status, stdin and the process are as with sh -c (only the shell's own
// error messages name the file).
const scriptBoot = ". /dev/fd/3"

// scriptHead starts a long command's file: the command's processes do not
// inherit the descriptor (the shell reads the file through its own). It
// ends with no newline, so the command's lines keep their numbers.
const scriptHead = "exec 3<&-; "

// shellLaunch returns the launch of command with sh: sh -c command, or, for
// a command over argvCommandMax, sh -c scriptBoot with the command in a
// file (memory, unlinked) that the caller closes once the launch is done.
func shellLaunch(sh, command string, env []string, dir string, tty bool) (launch, error) {
	l := launch{Argv: []string{sh, "-c", command}, Env: env, Dir: dir, TTY: tty}
	if len(command) <= argvCommandMax {
		return l, nil
	}
	f, err := scriptFile(scriptHead + command)
	if err != nil {
		return launch{}, err
	}
	l.Argv[2], l.script = scriptBoot, f
	return l, nil
}

// closeScript closes l's script file, if any.
func (l *launch) closeScript() {
	if l.script != nil {
		l.script.Close()
		l.script = nil
	}
}

// scriptFile returns a file, in no directory, that holds text: a memfd, or
// where memfd_create is refused an unlinked temporary file.
func scriptFile(text string) (*os.File, error) {
	f, err := memfd("sandbox-command")
	if err != nil {
		if f, err = os.CreateTemp("", "sandbox-command-"); err != nil {
			return nil, err
		}
		os.Remove(f.Name())
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// memfd makes an anonymous file in memory.
func memfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}
