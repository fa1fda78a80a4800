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

// InitOptions configures PID 1 (Init); the init mode's flags set them.
type InitOptions struct {
	// Lifetime: exit after this long (0: never).
	Lifetime time.Duration
	// Idle: exit once no request ran for this long (0: never).
	Idle time.Duration
	// ProcessesKeepAlive: running processes of the table count as
	// activity for Idle.
	ProcessesKeepAlive bool
}

// Init is the container's main process. It reaps orphaned processes, exits
// at once on SIGTERM, SIGINT or SIGHUP (the kernel then kills everything else
// in the container), exits once it ran for o.Lifetime when that is > 0, and
// exits when o.Idle > 0 and no request ran for that long (nor, with
// o.ProcessesKeepAlive, a process of its table): a request is a
// one-request helper ("call") that exists, or a request on the shared
// channel ("serve"), which announces itself with SIGUSR1 when it starts,
// every heartbeat while it runs and when it ends. An open but unused shared
// channel does not count, so a sandbox whose owner died (its connections
// dropped, their commands killed) and one whose owner forgot it both end.
// Time spent paused (frozen) counts for neither clock, and the idle clock
// starts again after a pause; the library may change both limits while the
// sandbox runs (see LifetimeFile).
func Init(o InitOptions) int {
	CatchInitSignals()
	sigs := initSignals
	prepareFirstChannel()                             // before the ready line: New takes the connection once the start returned
	_, _ = io.WriteString(os.Stdout, proto.ReadyLine) // EPIPE, not death: SIGPIPE is caught
	reserveThreads(4)
	l := newLimits(o.Lifetime, o.Idle, filepath.Dir(os.Args[0]), time.Now())
	serveProcs() // the process table (pid1_server.go)
	t := time.NewTicker(limitsTick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if o.ProcessesKeepAlive && procTab != nil && procTab.running() {
				l.active(time.Now()) // running processes are activity
			}
			if muxActivity() { // process requests (pid1_mux.go)
				l.active(time.Now())
			}
			if l.tick(time.Now()) {
				return 0
			}
		case sig := <-sigs:
			switch sig {
			case syscall.SIGCHLD:
				reapZombies()
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

// announce tells PID 1 that a helper connection started (for the idle
// timeout). It fails harmlessly when PID 1 runs as another user. (A
// variable: the package's tests, not in a container, must not signal the
// machine's PID 1.)
var announce = func() { _ = syscall.Kill(1, syscall.SIGUSR1) }
