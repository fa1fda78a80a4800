package helper

import (
	"context"
	"encoding/json"
	"net"
	"os"
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

// muxStart starts command through serveMux on a socket pair and returns
// the client's end and the answered process.
func muxStart(t *testing.T, tab *procTable, command string) (*proto.Writer, proto.ProcInfo) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "mux")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	server, client := conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { client.Close() })
	go tab.serveMux(server, proto.NewReader(server), proto.NewWriter(server))
	fr, fw := proto.NewReader(client), proto.NewWriter(client)
	if f, err := fr.ReadFrame(); err != nil || f.Kind != proto.KindResult {
		t.Fatalf("opening: %v %v", f.Kind, err)
	}
	body, _ := json.Marshal(proto.Request{Op: proto.OpProcStart, Command: command, Proc: &proto.ProcRequest{}})
	if err := fw.WriteFrame(proto.KindRequest, 1, body); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil || f.Kind != proto.KindResult || f.ID != 1 {
		t.Fatalf("start's answer: %v %v", f.Kind, err)
	}
	var res proto.Result
	if err := json.Unmarshal(f.Payload, &res); err != nil || res.Error != nil || res.Proc == nil {
		t.Fatalf("start's answer %s: %v", f.Payload, err)
	}
	return fw, res.Proc.Info
}

// A start answered on a multiplexed connection is launched when the
// serving helper says it passed the answer on, and without that word after
// launchFallback (the helper died in between): either way the command runs.
func TestStartLaunchWaitsForWord(t *testing.T) {
	saved := launchFallback
	defer func() { launchFallback = saved }()
	for _, word := range []bool{true, false} {
		tab := newProcTable()
		launchFallback = time.Hour
		if !word {
			launchFallback = 50 * time.Millisecond
		}
		fw, info := muxStart(t, tab, "echo started")
		if word {
			body, _ := json.Marshal(proto.Request{Op: procLaunchOp, Proc: &proto.ProcRequest{ID: info.ID}})
			if err := fw.WriteFrame(proto.KindRequest, 0, body); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := tab.lookup(proto.Request{Proc: &proto.ProcRequest{ID: info.ID}})
		reapUntil(t, tab, info.Pid)
		got, out := waitDone(t, tab, p)
		if got.ExitCode != 0 || out != "started\n" {
			t.Fatalf("word %v: exit %d, output %q: want 0 and %q", word, got.ExitCode, out, "started\n")
		}
		waitNoLaunches(t, tab)
	}
}

// A signal for a process whose launch still waits launches it first: the
// command (or the launcher about to become it) gets the signal, and the
// process ends by it, not with the launcher's failure (status 127).
func TestSignalLaunchesFirst(t *testing.T) {
	saved := launchFallback
	defer func() { launchFallback = saved }()
	launchFallback = time.Hour
	tab := newProcTable()
	fw, info := muxStart(t, tab, "sleep 100")
	body, _ := json.Marshal(proto.Request{Op: proto.OpProcSignal, Proc: &proto.ProcRequest{ID: info.ID, Signal: int(syscall.SIGTERM)}})
	if err := fw.WriteFrame(proto.KindRequest, 2, body); err != nil {
		t.Fatal(err)
	}
	p, _ := tab.lookup(proto.Request{Proc: &proto.ProcRequest{ID: info.ID}})
	reapUntil(t, tab, info.Pid)
	// Then the serving helper's word, which must find nothing to launch.
	body, _ = json.Marshal(proto.Request{Op: procLaunchOp, Proc: &proto.ProcRequest{ID: info.ID}})
	if err := fw.WriteFrame(proto.KindRequest, 0, body); err != nil {
		t.Fatal(err)
	}
	waitNoLaunches(t, tab)
	time.Sleep(100 * time.Millisecond) // a failed launch records itself
	got, out := waitDone(t, tab, p)
	if got.Signal != int(syscall.SIGTERM) || strings.Contains(out, "launcher failed") {
		t.Fatalf("exit %d, signal %d, output %q: want killed by SIGTERM", got.ExitCode, got.Signal, out)
	}
}

// waitNoLaunches fails unless no launch waits in tab within 5 s.
func waitNoLaunches(t *testing.T, tab *procTable) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tab.mu.Lock()
		waiting := len(tab.launches)
		tab.mu.Unlock()
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d launches still wait after 5 s", waiting)
		}
	}
}
