// Command sandbox-helper is injected into every sandbox container; see
// package helper. It is built for linux/amd64 and linux/arm64 by
// go generate in internal/helperbin.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dockersandbox/sandbox/internal/helper"
	"github.com/dockersandbox/sandbox/internal/proto"
)

const usage = "usage: sandbox-helper init [-lifetime d] [-idle d] | boot DEST WORKDIR init ... | call | serve | serve-direct SOCKET HELPER | reap | install DEST [UID:GID [DIR...]] | untar DIR | tar PATH | version"

// init catches PID 1's signals before main runs (helper.CatchInitSignals).
// A helper built for the tests (the sandboxtest build tag) may wait
// first: see startDelay.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		startDelay()
		helper.CatchInitSignals()
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "init":
		fs := flag.NewFlagSet("init", flag.ExitOnError)
		lifetime := fs.Duration("lifetime", 0, "exit after this long (0: never)")
		idle := fs.Duration("idle", 0, "exit when no helper connection existed for this long (0: never)")
		procActivity := fs.Bool("process-activity", true, "running processes count as activity for -idle")
		_ = fs.Parse(os.Args[2:])
		os.Exit(helper.Init(helper.InitOptions{Lifetime: *lifetime, Idle: *idle, ProcessesKeepAlive: *procActivity}))
	case "call", "serve":
		if os.Args[1] == "serve" {
			helper.KeepSpareReaper()
		}
		if err := helper.Serve(os.Stdin, os.Stdout, os.Args[1] == "call"); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox-helper:", err)
			os.Exit(1)
		}
	case helper.LauncherMode:
		os.Exit(helper.RunLauncher())
	case helper.ReaperMode:
		os.Exit(helper.RunReaper())
	case helper.BootMode:
		if len(os.Args) < 5 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(helper.Boot(os.Args[2], os.Args[3], os.Args[4:]))
	case proto.DirectServeMode:
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(helper.ServeDirect(os.Args[2], os.Args[3]))
	case helper.InstallMode, helper.UntarMode, helper.TarMode:
		os.Exit(fileMode(os.Args[1:]))
	case "version":
		fmt.Println(proto.Version)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}
