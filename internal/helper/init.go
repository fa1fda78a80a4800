// Package helper is the program injected into every sandbox container. It
// runs as PID 1 (Init), and serves requests from the library (Serve): shell
// commands in their own process group, and file operations on the
// container's filesystem as the sandbox user sees it.
package helper

import (
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Init is the container's main process. It reaps orphaned processes, exits
// at once on SIGTERM, SIGINT or SIGHUP (the kernel then kills everything else
// in the container), exits once it ran for lifetime when lifetime > 0, and
// exits when idle > 0 and no request ran for that long: a request is a
// one-request helper ("call") that exists, or a request on the shared
// channel ("serve"), which announces itself with SIGUSR1 when it starts,
// every heartbeat while it runs and when it ends. An open but unused shared
// channel does not count, so a sandbox whose owner died (its connections
// dropped, their commands killed) and one whose owner forgot it both end.
// Time spent paused (frozen) counts for neither clock, and the idle clock
// starts again after a pause; the library may change both limits while the
// sandbox runs (see LifetimeFile).
func Init(lifetime, idle time.Duration) int {
	CatchInitSignals()
	sigs := initSignals
	_, _ = io.WriteString(os.Stdout, proto.ReadyLine) // EPIPE, not death: SIGPIPE is caught
	reserveThreads(4)
	l := newLimits(lifetime, idle, filepath.Dir(os.Args[0]), time.Now())
	serveProcs() // the process table (procserver.go)
	t := time.NewTicker(limitsTick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if ProcessesKeepAlive && procTab != nil && procTab.running() {
				l.active(time.Now()) // running processes are activity
			}
			if muxActivity() { // process requests (procmux.go)
				l.active(time.Now())
			}
			if l.tick(time.Now()) {
				return 0
			}
		case sig := <-sigs:
			switch sig {
			case syscall.SIGCHLD:
				reap()
			case syscall.SIGUSR1: // a request started, runs or ended
				l.active(time.Now())
			case syscall.SIGPIPE: // a write to a closed pipe: its error says so
			default:
				return 0
			}
		}
	}
}

// initSignals receives PID 1's signals (CatchInitSignals).
var initSignals chan os.Signal

// CatchInitSignals makes PID 1 catch the signals Init handles; Init calls
// it, and the command calls it first thing (in its init function): a
// SIGTERM (the engine's stop) that comes before finds the Go runtime's own
// handler, which ends the program with status 2 instead of Init's clean 0,
// or, earlier still, no handler (the kernel drops it for PID 1, and the
// engine kills the container after its grace period). Init then writes
// proto.ReadyLine, which the library waits for after a start. SIGPIPE is
// caught too, so that a write to a closed standard output fails rather
// than ends PID 1 (Go's default for fd 1 and 2). Later calls do nothing.
func CatchInitSignals() {
	if initSignals != nil {
		return
	}
	initSignals = make(chan os.Signal, 16)
	signal.Notify(initSignals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD, syscall.SIGUSR1, syscall.SIGPIPE)
}

// connected reports whether a one-request helper serves the library right
// now (a shared channel's helper announces its requests instead).
func connected() bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	self := os.Args[0]
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[0] == self && args[1] == "call" {
			return true
		}
	}
	return false
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		if procTab != nil {
			procTab.reaped(pid, ws)
		}
	}
}

// announce tells PID 1 that a helper connection started (for the idle
// timeout). It fails harmlessly when PID 1 runs as another user. (A
// variable: the package's tests, not in a container, must not signal the
// machine's PID 1.)
var announce = func() { _ = syscall.Kill(1, syscall.SIGUSR1) }
