package helper

import (
	"runtime"
	"sync"
)

// maxProcs caps the helper's GOMAXPROCS: it does I/O, not computation,
// and every OS thread it runs counts against the sandbox's pids limit.
const maxProcs = 2

// reserveThreads makes the Go runtime start n OS threads now and keep them
// idle for later (the runtime never ends an idle thread). A fork bomb that
// exhausts the sandbox's pids limit leaves no room for a new thread, and a
// Go program that needs one then dies ("failed to create new OS thread"):
// the helper would die with the command it must kill, or, as PID 1, with
// the whole container. With threads in reserve it goes on.
func reserveThreads(n int) {
	if runtime.GOMAXPROCS(0) > maxProcs {
		runtime.GOMAXPROCS(maxProcs)
	}
	var locked sync.WaitGroup
	release := make(chan struct{})
	for range n {
		locked.Add(1)
		go func() {
			runtime.LockOSThread() // a thread of its own, which must exist
			locked.Done()
			<-release
			runtime.UnlockOSThread() // back to the runtime's idle threads
		}()
	}
	locked.Wait()
	close(release)
}
