package helper

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// ServeDirect opens the shared channel over the library's socket at sock
// (proto.DirectServeMode): it reads the token from standard input,
// connects with it, and executes the helper at helperPath in serve mode
// with the connection as its standard input and output, in this process
// (same PID, session, user and environment as the exec that started it).
// The helper that serves is the one at helperPath, whatever is there now,
// as when the channel is an exec of it. It returns only on failure, with
// the exit code, having said why on standard error: the library then opens
// the channel as an exec.
func ServeDirect(sock, helperPath string) int {
	if err := serveDirect(sock, helperPath); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-helper serve-direct:", err)
	}
	return 1
}

func serveDirect(sock, helperPath string) error {
	tok := make([]byte, proto.DirectTokenSize)
	read := make(chan error, 1)
	go func() { _, err := io.ReadFull(os.Stdin, tok); read <- err }()
	select {
	case err := <-read:
		if err != nil {
			return fmt.Errorf("read the token: %w", err)
		}
	case <-time.After(directWait):
		return fmt.Errorf("no token within %v", directWait)
	}
	c := directConnect(context.Background(), sock, hex.EncodeToString(tok))
	if c == nil {
		return fmt.Errorf("the library did not take a connection to %s", sock)
	}
	f, err := c.File() // a blocking descriptor of its own
	c.Close()
	if err != nil {
		return err
	}
	for _, fd := range []int{0, 1} {
		if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil {
			return fmt.Errorf("dup: %w", err)
		}
	}
	f.Close()
	return syscall.Exec(helperPath, []string{helperPath, "serve"}, os.Environ())
}
