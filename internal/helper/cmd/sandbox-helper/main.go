// Command sandbox-helper is injected into every sandbox container; see
// package helper. It is built for linux/amd64 and linux/arm64 by
// go generate in internal/helperbin.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/dockersandbox/sandbox/internal/helper"
	"github.com/dockersandbox/sandbox/internal/proto"
)

const usage = "usage: sandbox-helper init [-lifetime d] [-idle d] | call | serve | reap | install DEST [UID:GID [DIR...]] | untar DIR | tar PATH | version"

// startDelayEnv, set in a sandbox's environment, delays PID 1 by that
// long before it catches its signals: the tests stand in for a slow start
// with it (a stop in that window must still end the helper cleanly).
const startDelayEnv = "DOCKERSANDBOX_TEST_HELPER_DELAY"

// init catches PID 1's signals before main runs (helper.CatchInitSignals).
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		if d, err := time.ParseDuration(os.Getenv(startDelayEnv)); err == nil && d > 0 && d <= time.Minute {
			time.Sleep(d)
		}
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
		helper.ProcessesKeepAlive = *procActivity
		os.Exit(helper.Init(*lifetime, *idle))
	case "call", "serve":
		if os.Args[1] == "serve" {
			helper.KeepSpareReaper()
		}
		if err := helper.Serve(os.Stdin, os.Stdout, os.Args[1] == "call"); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox-helper:", err)
			os.Exit(1)
		}
	case helper.ProcExecMode:
		os.Exit(helper.ProcExec())
	case helper.ReapMode:
		os.Exit(helper.Reap())
	case helper.InstallMode, helper.UntarMode, helper.TarMode:
		os.Exit(fileMode(os.Args[1:]))
	case "version":
		fmt.Println(proto.Version)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}
