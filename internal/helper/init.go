// Package helper is the program injected into every sandbox container. It
// runs as PID 1 (Init), and serves requests from the library (Serve): shell
// commands in their own process group, and file operations on the
// container's filesystem as the sandbox user sees it.
package helper

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Init is the container's main process. It reaps orphaned processes, exits
// at once on SIGTERM, SIGINT or SIGHUP (the kernel then kills everything else
// in the container), and exits after lifetime when lifetime > 0.
func Init(lifetime time.Duration) int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	var expire <-chan time.Time
	if lifetime > 0 {
		expire = time.After(lifetime)
	}
	for {
		select {
		case <-expire:
			return 0
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				return 0
			}
			reap()
		}
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
