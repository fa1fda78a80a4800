package helper

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// A live process is not dying; one whose SIGKILL is pending or that is
// exiting is (covered by the state, once it is a zombie); this process is
// not.
func TestDying(t *testing.T) {
	if dyingNow(os.Getpid()) {
		t.Fatal("this test process reads as dying")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	if dyingNow(cmd.Process.Pid) {
		t.Fatal("a sleeping process reads as dying")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	st, ok := readStat(cmd.Process.Pid)
	if !dyingNow(cmd.Process.Pid) && ok && !st.dead() {
		t.Fatalf("a killed process reads as alive (state %c)", st.state)
	}
	_ = cmd.Wait()
	if !dyingNow(cmd.Process.Pid) {
		t.Fatal("a reaped process reads as alive")
	}
}

// dyingNow is dying with pid's stat read now.
func dyingNow(pid int) bool {
	st, _ := readStat(pid)
	return dying(pid, st)
}
