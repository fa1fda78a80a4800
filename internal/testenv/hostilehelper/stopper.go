package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// helperExe is where the library's helper lives in the container.
const helperExe = "/.dockersandbox/sandbox-helper"

// stopper is the attack of a process that cannot replace the helper (the
// secure profile's user): in a session of its own, it SIGSTOPs every helper
// exec ("serve", "call") it may signal, as soon as it sees one, for ever.
func stopper() {
	_, _ = syscall.Setsid()
	self := os.Getpid()
	for {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || pid == 1 {
				continue
			}
			cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			args := bytes.Split(cmd, []byte{0})
			if len(args) < 2 || string(args[0]) != helperExe || string(args[1]) != "serve" && string(args[1]) != "call" {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGSTOP) // again and again: cheap, and a SIGCONT is undone
		}
		time.Sleep(2 * time.Millisecond)
	}
}
