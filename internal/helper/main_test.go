package helper

import (
	"os"
	"testing"
)

// TestMain lets the test binary, which runExec starts again as each
// command's reaper (it runs /proc/self/exe), act as one.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ReapMode {
		os.Exit(Reap())
	}
	os.Exit(m.Run())
}
