//go:build linux

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// muxOpen, the start of a python3 program run in the sandbox, opens a
// multiplexed connection to PID 1's process table as a serving helper
// does, and prints "opened" and the kind of PID 1's answer (R: accepted).
const muxOpen = `
import json, os, socket, struct, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect("/.dockersandbox/run/procs.sock")
def frame(kind, id, body):
    s.sendall(struct.pack(">cII", kind, id, len(body)) + body)
frame(b"Q", 1, json.dumps({"op": "proc_mux"}).encode())
hdr = s.recv(9)
print("opened", hdr[:1].decode(), flush=True)
`

// startMuxAttacker runs script (muxOpen and what follows it) with python3
// in sb, with args, and returns it once PID 1 accepted its connection.
func startMuxAttacker(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, script, args string) *sandbox.Process {
	t.Helper()
	require.NoError(t, sb.Write(ctx, "/tmp/attack.py", []byte(script)))
	attacker, err := sb.StartProcess(ctx, "exec python3 /tmp/attack.py "+args)
	require.NoError(t, err)
	readUntil(t, attacker, "opened ", 30*time.Second)
	out, err := attacker.Read(ctx, 0)
	require.NoError(t, err)
	require.Contains(t, string(out.Data), "opened R", "PID 1 accepted the multiplexed connection")
	return attacker
}

// requireEchoes starts "echo alive i" in sb and requires that it ran:
// exit status 0, its line in its output; within 10 s.
func requireEchoes(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := sb.StartProcess(ctx, fmt.Sprintf("echo alive %d", i))
	require.NoError(t, err, "Start beside the attack")
	info, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, info.ExitCode)
	o, err := p.Read(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("alive %d\n", i), string(o.Data))
}

// muxFlood, run by python3 in the sandbox, opens a multiplexed connection
// to PID 1's process table (as a serving helper does) and sends 20,000
// reads of a process's full 1 MiB log without ever reading an answer.
const muxFlood = muxOpen + `
s.setblocking(False)
sent = 0
for i in range(20000):
    try:
        frame(b"Q", 100 + i, json.dumps({"op": "proc_read", "proc": {"id": sys.argv[1], "max": 1048576}}).encode())
        sent += 1
    except BlockingIOError:
        break
print("sent", sent, flush=True)
time.sleep(600)
`

// A sandbox process that opens a multiplexed connection to PID 1's process
// table and floods it with reads without reading the answers stalls only
// itself: PID 1 serves at most 256 requests of a connection at once and
// stops reading it meanwhile, so its memory stays bounded, and the
// library's process calls, on the serving helper's own connection, go on.
func TestProcessTableFloodedConnection(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.DebianImage)
	ctx := testCtx(t)
	big, err := sb.StartProcess(ctx, "head -c 2000000 /dev/zero | tr '\\0' x; exec sleep 600")
	require.NoError(t, err)
	readUntilLen := func() {
		require.Eventually(t, func() bool {
			out, err := big.Read(ctx, 0)
			return err == nil && len(out.Data) > 0 && out.Next >= 2000000
		}, 20*time.Second, 100*time.Millisecond)
	}
	readUntilLen()
	attacker := startMuxAttacker(t, ctx, sb, muxFlood, big.ID())
	readUntil(t, attacker, "sent ", 30*time.Second)
	time.Sleep(2 * time.Second) // PID 1 serves what it read, its writes block

	for i := range 5 {
		requireEchoes(t, ctx, sb, i)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = sb.Processes(cctx)
		require.NoError(t, err)
		cancel()
	}
	rss := pid1RSS(t, sb) // process_scale_test.go
	t.Logf("PID 1: VmRSS %d kB", rss>>10)
	// 256 reads in flight hold up to 1 MiB each while their writes block;
	// 20,000 would hold ~20 GiB.
	require.Less(t, rss, int64(600<<20), "PID 1's memory is bounded")
	require.NoError(t, attacker.Kill(ctx))
	_ = sandbox.ErrProcessDone
}

// More waits at once than PID 1 serves on one connection (300 Waits of
// processes that do not end, each holding its request up to 10 s in PID 1;
// PID 1 serves 256 of a connection at once) do not hold up other process
// calls: beyond 128 in flight, a serving helper's requests take a
// connection of their own.
func TestProcessManyWaitsDoNotBlock(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	const n = 300
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, n)
	for range n {
		p, err := sb.StartProcess(ctx, "exec sleep 600")
		require.NoError(t, err)
		go func() {
			_, err := p.Wait(wctx)
			errs <- err
		}()
	}
	time.Sleep(2 * time.Second) // the waits are in PID 1
	for i := range 5 {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		p, err := sb.StartProcess(cctx, fmt.Sprintf("echo beside %d", i))
		require.NoError(t, err)
		out, err := p.Read(cctx, 0, sandbox.OutputWait(5*time.Second))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("beside %d\n", i), string(out.Data))
		cancel()
		took := time.Since(start)
		t.Logf("Start and Read beside %d waits: %v", n, took)
		require.Less(t, took, 5*time.Second, "not behind the waits (each up to 10 s)")
	}
	stop()
	for range n {
		require.ErrorIs(t, <-errs, context.Canceled)
	}
}

// wordFlood, run by python3 in the sandbox, opens a multiplexed connection
// to PID 1's process table and, until /tmp/words.stop exists (at most
// 30 s), tells it as fast as it can that the answers of starts were passed
// on (the serving helper's word that launches a started process): for the
// IDs it is given and for made-up ones.
const wordFlood = muxOpen + `
n = 0
end = time.time() + 30
while time.time() < end and not os.path.exists("/tmp/words.stop"):
    for _ in range(1000):
        for i in sys.argv[1:] + ["%016x" % n]:
            frame(b"Q", 0, json.dumps({"op": "proc_launch", "proc": {"id": i}}).encode())
            n += 1
print("sent", n, flush=True)
time.sleep(600)
`

// A sandbox process that floods PID 1 with launch words (which PID 1 never
// answers) burns its own sandbox's CPU and nothing more: starts beside it
// run their commands, and PID 1's memory stays bounded. (Not parallel: the
// flood takes both CPUs of a small machine while it lasts.)
func TestProcessLaunchWordFlood(t *testing.T) {
	sb := newSandbox(t, testenv.DebianImage)
	ctx := testCtx(t)
	old, err := sb.StartProcess(ctx, "exec sleep 600")
	require.NoError(t, err)
	before := pid1RSS(t, sb)
	attacker := startMuxAttacker(t, ctx, sb, wordFlood, old.ID())

	begin := time.Now()
	starts := 0
	for i := 0; i < 10 || time.Since(begin) < 3*time.Second; i++ { // 3 s of flood at least
		starts++
		requireEchoes(t, ctx, sb, i)
	}
	require.NoError(t, sb.Write(ctx, "/tmp/words.stop", nil))
	readUntil(t, attacker, "sent ", 30*time.Second)
	out, err := attacker.Read(ctx, 0)
	require.NoError(t, err)
	after := pid1RSS(t, sb)
	t.Logf("%s; %d starts beside it; PID 1: VmRSS %d kB before, %d kB after", strings.TrimSpace(string(out.Data)), starts, before>>10, after>>10)
	require.Less(t, after-before, int64(32<<20), "PID 1's memory grew by 32 MiB or more")
	info, err := old.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, sandbox.ProcessRunning, info.State, "a launched process is not launched again")
	require.NoError(t, attacker.Kill(ctx))
}
