package helper

import "syscall"

// reapZombies collects every exited child of PID 1 without blocking: the
// orphans the container's processes leave to it, and the processes of its
// table (procTable.reaped). It runs on every SIGCHLD (Init). Not to be
// confused with the reaper mode (reaper_main.go), which a serving helper
// starts under each command.
func reapZombies() {
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
