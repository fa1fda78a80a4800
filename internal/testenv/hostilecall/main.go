// Command hostilecall makes one call on a sandbox and reports, as JSON on
// stdout, its error and the peak resident memory of the process, so that
// the peak is that call's alone. The hostile-helper tests build it without
// the race detector (whose shadow memory would count) and run it against a
// sandbox whose helper they replaced.
//
// A watchdog ends the process (exit status 3) as soon as its resident
// memory passes -abort bytes, and an address-space limit stops it from
// taking the machine down with it: the test only needs to know that the
// bound broke.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

// Report is what hostilecall prints.
type Report struct {
	Op        string `json:"op"`
	Err       string `json:"err,omitempty"`       // the call's error
	FileErr   string `json:"file_err,omitempty"`  // the first file's error (uploads, downloads)
	Helper    bool   `json:"helper"`              // an error is ErrHelper
	TooLarge  bool   `json:"too_large"`           // an error is ErrTooLarge
	Bytes     int    `json:"bytes"`               // what the call returned (output, content, items)
	Base      int64  `json:"base"`                // resident bytes before the call
	Peak      int64  `json:"peak"`                // peak resident bytes of the process
	ElapsedMS int64  `json:"elapsed_ms"`          // how long the call took
	Aborted   bool   `json:"aborted,omitempty"`   // the watchdog ended the call
	Watchdog  int64  `json:"watchdog,omitempty"`  // resident bytes when it did
	Deadline  string `json:"deadline,omitempty"`  // the call's context deadline, if any
	Attach    string `json:"attach,omitempty"`    // Attach's error
	Detail    string `json:"detail,omitempty"`    // anything else worth a look
	Truncated bool   `json:"truncated,omitempty"` // Execute's output was capped
}

func main() {
	id := flag.String("id", "", "sandbox ID")
	op := flag.String("op", "", "execute, read, ls, glob, grep, edit, write, delete, download, upload")
	shared := flag.Bool("shared", true, "use the shared channel")
	maxDownload := flag.Int64("max-download", 0, "WithMaxDownloadBytes (0: the default)")
	deadline := flag.Duration("deadline", 0, "the call's context deadline (0: none)")
	abort := flag.Int64("abort", 512<<20, "resident bytes past which the watchdog ends the process")
	flag.Parse()

	// 3 GiB of address space: far above the bound, far below the machine.
	lim := syscall.Rlimit{Cur: 3 << 30, Max: 3 << 30}
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &lim)

	rep := Report{Op: *op}
	opts := []sandbox.Option{sandbox.WithSharedChannel(*shared)}
	if *maxDownload > 0 {
		opts = append(opts, sandbox.WithMaxDownloadBytes(*maxDownload))
	}
	if e := testenv.Engine(); e != nil { // the engine the tests run on (DOCKERSANDBOX_TEST_ENGINE)
		opts = append(opts, sandbox.WithEngine(e))
	}
	sb, err := sandbox.Attach(context.Background(), *id, opts...)
	if err != nil {
		rep.Attach = err.Error()
		emit(rep)
		os.Exit(1)
	}
	ctx := context.Background()
	if *deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *deadline)
		defer cancel()
		rep.Deadline = deadline.String()
	}
	runtime.GC()
	debug.FreeOSMemory()
	rep.Base = status("VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil { // VmHWM = VmRSS
		rep.Detail = "cannot reset the peak: " + err.Error()
	}
	go watchdog(Report{Op: *op, Base: rep.Base, Deadline: rep.Deadline}, *abort)
	start := time.Now()
	n, fileErr, err := call(ctx, sb, *op, &rep)
	rep.ElapsedMS = time.Since(start).Milliseconds()
	rep.Peak = status("VmHWM")
	rep.Bytes = n
	for _, e := range []error{err, fileErr} {
		rep.Helper = rep.Helper || errors.Is(e, sandbox.ErrHelper)
		rep.TooLarge = rep.TooLarge || errors.Is(e, sandbox.ErrTooLarge)
	}
	if err != nil {
		rep.Err = clip(err.Error())
	}
	if fileErr != nil {
		rep.FileErr = clip(fileErr.Error())
	}
	emit(rep)
}

// call runs op and returns how much it returned, the first file's error
// and the call's error.
func call(ctx context.Context, sb *sandbox.Sandbox, op string, rep *Report) (int, error, error) {
	switch op {
	case "execute":
		res, err := sb.Execute(ctx, "echo hostile", sandbox.ExecTimeout(0))
		rep.Truncated = res.Truncated
		return len(res.Output), nil, err
	case "read":
		page, err := sb.Read(ctx, "/etc/hostname")
		return len(page.Content), nil, err
	case "ls":
		infos, err := sb.Ls(ctx, "/")
		return len(infos), nil, err
	case "glob":
		res, err := sb.Glob(ctx, "*", "/")
		return len(res.Matches), nil, err
	case "grep":
		res, err := sb.Grep(ctx, "x", "/etc")
		return len(res.Matches), nil, err
	case "edit":
		n, err := sb.Edit(ctx, "/tmp/hostile.txt", "a", "b", false)
		return n, nil, err
	case "write":
		return 0, nil, sb.Write(ctx, "/tmp/hostile.txt", []byte("x"))
	case "delete":
		return 0, nil, sb.Delete(ctx, "/tmp/hostile.txt")
	case "download":
		res, err := sb.DownloadFiles(ctx, []string{"/etc/hostname"})
		if len(res) > 0 {
			return len(res[0].Content), res[0].Err, err
		}
		return 0, nil, err
	case "proc-read":
		// A process started, then a read of its output (its first call
		// opens the channel: a handshake's time).
		p, err := sb.StartProcess(ctx, "true")
		if err != nil {
			return 0, nil, err
		}
		out, err := p.Read(ctx, 10)
		return len(out.Data), nil, err
	case "upload":
		// Over 1 MiB: through the upload preflight and the archive API.
		res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "/tmp/hostile.bin", Content: make([]byte, 2<<20)}})
		if len(res) > 0 {
			return 0, res[0].Err, err
		}
		return 0, nil, err
	}
	return 0, nil, fmt.Errorf("unknown op %q", op)
}

// watchdog ends the process once its resident memory passes abort bytes.
func watchdog(r Report, abort int64) {
	for {
		if rss := status("VmRSS"); rss > abort {
			r.Aborted, r.Watchdog, r.Peak = true, rss, status("VmHWM")
			emit(r)
			os.Exit(3)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func emit(rep Report) {
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
}

// status returns a field of /proc/self/status, in bytes (-1 if missing).
func status(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500] + "..."
	}
	return s
}
