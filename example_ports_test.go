package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/dockersandbox/sandbox"
)

// startEcho starts an echo server on port 7000 in sb, in the background
// until ctx ends, and waits for it.
func startEcho(ctx context.Context, sb *sandbox.Sandbox) error {
	if err := sb.Command(ctx, "exec nc -ll -p 7000 -e cat").Start(); err != nil {
		return err
	}
	for range 100 {
		if c, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000"); err == nil {
			return c.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the echo server did not start")
}

// Dial connects to a server inside a sandbox that has no network at all.
func ExampleSandbox_Dial() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := sandbox.New(ctx, append(publicExampleOptions, sandbox.WithNetworkMode("none"))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if err := startEcho(ctx, sb); err != nil {
		fmt.Println(err)
		return
	}
	conn, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	fmt.Fprintln(conn, "hello through the helper")
	line, err := bufio.NewReader(conn).ReadString('\n')
	fmt.Print(line, err, "\n")
	// Output:
	// hello through the helper
	// <nil>
}

// Forward serves a sandbox's port on the host's loopback.
func ExampleSandbox_Forward() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if err := sb.Write(ctx, "/tmp/www/index.html", []byte("preview\n")); err != nil {
		fmt.Println(err)
		return
	}
	if err := sb.Command(ctx, "exec httpd -f -p 127.0.0.1:8080 -h /tmp/www").Start(); err != nil {
		fmt.Println(err)
		return
	}
	fw, err := sb.Forward(ctx, "", 8080) // 127.0.0.1, a free port
	if err != nil {
		fmt.Println(err)
		return
	}
	defer fw.Close()
	for range 100 { // until the server listens
		resp, err := http.Get("http://" + fw.Addr().String() + "/index.html")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Print(string(body))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Output:
	// preview
}

// HTTPClient checks a server's health from the host, inside the sandbox's
// network namespace.
func ExampleSandbox_HTTPClient() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := sandbox.New(ctx, append(publicExampleOptions, sandbox.WithNetworkMode("none"))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if err := sb.Write(ctx, "/tmp/www/health", []byte("ok\n")); err != nil {
		fmt.Println(err)
		return
	}
	if err := sb.Command(ctx, "exec httpd -f -p 8080 -h /tmp/www").Start(); err != nil {
		fmt.Println(err)
		return
	}
	client := sb.HTTPClient()
	for range 100 {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://localhost:8080/health", nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Print(resp.StatusCode, " ", string(body))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Output:
	// 200 ok
}

// Watch reports what changes in a directory tree.
func ExampleSandbox_Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if _, err := sb.Execute(ctx, "mkdir -p /tmp/src"); err != nil {
		fmt.Println(err)
		return
	}
	w, err := sb.Watch(ctx, "/tmp/src", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := sb.Execute(ctx, "cd /tmp/src && echo x > a.go && mv a.go b.go && rm b.go"); err != nil {
		fmt.Println(err)
		return
	}
	for ev := range w.Events() {
		fmt.Println(ev.Op, ev.Path, ev.IsDir)
		if ev.Op == sandbox.WatchRemove {
			cancel() // ends the watch: Events is closed
		}
	}
	fmt.Println(w.Err())
	// Output:
	// create /tmp/src/a.go false
	// write /tmp/src/a.go false
	// rename /tmp/src/a.go false
	// create /tmp/src/b.go false
	// remove /tmp/src/b.go false
	// context canceled
}
