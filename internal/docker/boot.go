package docker

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// A container boots when its creation shares a directory with it (the
// sandbox package's port socket directory, on a daemon of this machine):
// the helper is written there, on the host, and PID 1 is that read-only
// copy in proto.BootMode, which installs the helper at its usual path and
// executes it as init. The archive API's copy it replaces cost some 55 ms
// whatever its size (the daemon mounts the container's filesystem for it).
// Only a container whose PID 1 runs as root on a writable root filesystem
// boots: the install writes into the container's own filesystem as the
// archive copy did, owner root; other users, and read-only roots (the
// helper then goes on a volume), are copied into as before.

// SharedHelper is the helper's name in the shared directory.
const SharedHelper = "sandbox-helper"

// bootable reports whether a container of spec, from an image whose USER
// is imageUser, can boot: PID 1 runs as root (the spec's user, or else the
// image's, is "", 0 or root, with no group or group 0 or root) on a
// writable root filesystem, and its command is the helper's init.
func bootable(spec *engine.Spec, imageUser string) bool {
	user := spec.User
	if user == "" {
		user = imageUser
	}
	name, group, _ := strings.Cut(user, ":")
	root := func(s string) bool { return s == "" || s == "0" || s == "root" }
	return root(name) && root(group) && !spec.ReadOnlyRootfs &&
		len(spec.Command) > 1 && spec.Command[0] == spec.Helper.Path && spec.Command[1] == "init" &&
		path.IsAbs(spec.WorkingDir)
}

// bootEntrypoint is PID 1's argv that boots from the helper shared at
// target.
func bootEntrypoint(spec *engine.Spec, target string) []string {
	return append([]string{path.Join(target, SharedHelper), proto.BootMode, spec.Helper.Path, spec.WorkingDir}, spec.Command[1:]...)
}

// WriteShared writes data to name, a file of a directory shared with a
// container, with mode whatever the umask, through a temporary file renamed
// into place: the container never sees it half written.
func WriteShared(name string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".shared-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// bootedCommand is PID 1's argv as the spec gave it, for a container that
// booted (argv as bootEntrypoint made it), else argv.
func bootedCommand(argv []string) []string {
	if len(argv) > 4 && argv[1] == proto.BootMode && path.Base(argv[0]) == SharedHelper {
		return append([]string{argv[2]}, argv[4:]...)
	}
	return argv
}

// plainOutput is what a container wrote, from an attach's stream: the
// payloads of its frames when it is multiplexed (8-byte headers: stream 1
// or 2, three zero bytes, a big-endian length), else the bytes as they
// came. A stream cut in a frame keeps what arrived. Only for messages: the
// container writes what it likes.
func plainOutput(b []byte) []byte {
	var out bytes.Buffer
	for len(b) >= 8 && (b[0] == 1 || b[0] == 2) && b[1] == 0 && b[2] == 0 && b[3] == 0 {
		n := int(b[4])<<24 | int(b[5])<<16 | int(b[6])<<8 | int(b[7])
		b = b[8:]
		n = min(n, len(b))
		out.Write(b[:n])
		b = b[n:]
	}
	if out.Len() == 0 {
		return slices.Clone(b)
	}
	return out.Bytes()
}
