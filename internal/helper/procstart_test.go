package helper

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// reapUntil collects pid's exit into t as PID 1 would, within 10 s.
func reapUntil(tb testing.TB, t *procTable, pid int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
			t.reaped(pid, ws)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("process %d did not exit within 10 s", pid)
}

// waitDone waits for p's output to end and returns its info and log.
func waitDone(tb testing.TB, t *procTable, p *proc) (proto.ProcInfo, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	for !p.done() {
		if !t.waitChange(ctx, p, time.Now().Add(10*time.Second)) {
			tb.Fatalf("process %s: output did not end", p.id)
		}
	}
	return p.info(), string(p.log.read(p.log.base(), proto.MaxProcRead))
}

// A start answers before its launch, with the process in the table; the
// launch that follows runs the command.
func TestStartAnswersThenLaunches(t *testing.T) {
	tab := newProcTable()
	res, then := tab.start(proto.Request{Op: proto.OpProcStart, Command: "echo started; exit 3", Proc: &proto.ProcRequest{}})
	if res.Error != nil || res.Proc == nil || then == nil {
		t.Fatalf("start: %+v", res.Error)
	}
	info := res.Proc.Info
	if !info.Running || info.Pid <= 0 {
		t.Fatalf("answered %+v: want a running process with its pid", info)
	}
	p, bad := tab.lookup(proto.Request{Proc: &proto.ProcRequest{ID: info.ID}})
	if bad != nil {
		t.Fatalf("not in the table when answered: %+v", bad.Error)
	}
	then()
	reapUntil(t, tab, info.Pid)
	got, out := waitDone(t, tab, p)
	if got.ExitCode != 3 || out != "started\n" {
		t.Fatalf("exit %d, output %q: want 3 and %q", got.ExitCode, out, "started\n")
	}
}

// A launcher killed between the answer and the launch (by a command of the
// sandbox) ends its process with status 127 and the reason in its output,
// whichever comes first, its exit or the failed launch.
func TestStartLaunchFails(t *testing.T) {
	for _, exitFirst := range []bool{true, false} {
		tab := newProcTable()
		res, then := tab.start(proto.Request{Op: proto.OpProcStart, Command: "echo never", Proc: &proto.ProcRequest{}})
		if res.Error != nil || then == nil {
			t.Fatalf("start: %+v", res.Error)
		}
		pid := res.Proc.Info.Pid
		p, _ := tab.lookup(proto.Request{Proc: &proto.ProcRequest{ID: res.Proc.Info.ID}})
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if exitFirst {
			reapUntil(t, tab, pid)
			then()
		} else {
			for st, ok := readStat(pid); ok && !st.dead(); st, ok = readStat(pid) {
				time.Sleep(time.Millisecond) // dead, not yet collected
			}
			then()
			reapUntil(t, tab, pid)
		}
		info, out := waitDone(t, tab, p)
		if info.Running || info.ExitCode != 127 || info.Signal != 0 {
			t.Fatalf("exit first %v: %+v, want exit status 127", exitFirst, info)
		}
		if !strings.Contains(out, "launcher failed") || strings.Contains(out, "never") {
			t.Fatalf("exit first %v: output %q, want the launch's failure", exitFirst, out)
		}
	}
}
