package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// A shell on a terminal, driven as a person would: type a line, read what
// the terminal shows, resize it, leave with an exit status.
func ExampleCmd_Resize() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	cmd := sb.Command(ctx, "PS1='$ ' exec sh")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	keys, _ := cmd.StdinPipe()
	screen, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	lines := bufio.NewScanner(screen)
	// readUntil reads the terminal's lines until one starts with prefix.
	readUntil := func(prefix string) string {
		for lines.Scan() {
			if line := strings.TrimRight(lines.Text(), "\r"); strings.HasPrefix(line, prefix) {
				return line
			}
		}
		return ""
	}

	_, _ = io.WriteString(keys, "echo size: $(stty size)\r")
	fmt.Println(readUntil("size: "))
	_ = cmd.Resize(ctx, 40, 120)
	_, _ = io.WriteString(keys, "echo size: $(stty size)\r")
	fmt.Println(readUntil("size: "))
	_, _ = io.WriteString(keys, "exit 3\r")
	_, _ = io.Copy(io.Discard, screen) // to its end, then Wait
	err = cmd.Wait()
	fmt.Println(err, cmd.ProcessState.ExitCode())
	// Output:
	// size: 24 80
	// size: 40 120
	// exit status 3 3
}
