package helper

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A serving helper's first process request can come before PID 1 listens
// (they start together): the dial waits for the socket, within the
// helper's first procSocketWait; later a missing socket fails at once.
func TestDialProcsWaitsForPID1(t *testing.T) {
	path := procSocketPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Skipf("no run directory beside the test binary: %v", err)
	}
	defer os.RemoveAll(filepath.Dir(path))
	saved := helperStarted
	defer func() { helperStarted = saved }()

	helperStarted = time.Now()
	listening := make(chan *net.UnixListener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Error(err)
		}
		listening <- l
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialProcs(ctx)
	if err != nil {
		t.Fatalf("a socket that appears 300 ms later: %v", err)
	}
	c.Close()
	l := <-listening
	l.Close()
	os.Remove(path)

	helperStarted = time.Now().Add(-2 * procSocketWait)
	start := time.Now()
	_, err = dialProcs(ctx)
	if !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("a socket missing long after the start: %v, want ENOENT", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a socket missing long after the start failed after %v, want at once", d)
	}

	helperStarted = time.Now()
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	start = time.Now()
	if _, err = dialProcs(short); err == nil {
		t.Fatal("no socket: the dial succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the dial outlived its context: %v", d)
	}
}
