package helper

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPTYHost opens a pair on the host, sizes it, runs stty on it as its
// controlling terminal and reads the size it sees.
func TestPTYHost(t *testing.T) {
	master, slave, err := OpenPTY()
	if err != nil {
		t.Skipf("no PTY on this host: %v", err)
	}
	defer master.Close()
	if err := SetWinsize(master, 33, 101); err != nil {
		t.Fatal(err)
	}
	rows, cols, err := GetWinsize(slave)
	if err != nil || rows != 33 || cols != 101 {
		t.Fatalf("GetWinsize = %d, %d, %v; want 33, 101", rows, cols, err)
	}
	cmd := exec.Command("sh", "-c", "stty size; tty; [ -t 0 ] && echo isatty")
	if err := StartOnPTY(cmd, slave); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(&out, master) // ends with EIO once the slave is closed everywhere
		close(done)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the master did not end after the command exited")
	}
	s := out.String()
	if !strings.Contains(s, "33 101") || !strings.Contains(s, "/dev/pts/") || !strings.Contains(s, "isatty") {
		t.Fatalf("output %q: want the size 33 101, a /dev/pts name and isatty", s)
	}
}
