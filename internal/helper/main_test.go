package helper

import (
	"os"
	"testing"
)

// TestMain lets the test binary, which runExec starts again as each
// command's reaper and the process table as its launchers (they run
// /proc/self/exe), act as one.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ReaperMode {
		os.Exit(RunReaper())
	}
	if len(os.Args) > 1 && os.Args[1] == LauncherMode {
		os.Exit(RunLauncher())
	}
	announce = func() {} // PID 1 here is the machine's, not a helper
	os.Exit(m.Run())
}
