package testenv

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// WatchHeap samples the test process's heap in use every 20 ms until the
// function it returns is called, which returns the heap in use at the
// start (after a collection) and the highest sample. Meanwhile a soft
// memory limit of the runtime's memory at the start plus room keeps the
// collector abreast of garbage: on two busy cores a starved collector let
// garbage pass for growth. Live memory past the limit still shows in the
// peak (the limit is soft), so a buffer without a bound still fails the
// test; room should be half the growth the test allows, or more.
func WatchHeap(room int64) (stop func() (base, peak uint64)) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	old := debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + room)
	var top atomic.Uint64
	top.Store(base)
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > top.Load() {
				top.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		<-sampled
		debug.SetMemoryLimit(old)
		return base, top.Load()
	}
}

// LiveHeap returns the test process's live heap: the bytes a collection
// leaves allocated.
func LiveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
