package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox"
)

// load measures throughput: 200 concurrent Executes on one sandbox, and
// 50 sandboxes created (8 at a time), used and closed.
func (b *bench) load(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	if _, err := sb.Execute(ctx, "true"); err != nil {
		return nil, err
	}
	start := time.Now()
	err = parallel(200, 200, func(i int) error {
		resp, err := sb.Execute(ctx, fmt.Sprintf("echo %d", i))
		if err == nil && resp.Output != fmt.Sprintf("%d\n", i) {
			err = fmt.Errorf("execute %d: got %q", i, resp.Output)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out["concurrent_200_exec_s"] = time.Since(start).Seconds()
	out["concurrent_exec_per_s"] = 200 / time.Since(start).Seconds()

	sbs := make([]*sandbox.Sandbox, 50)
	start = time.Now()
	err = parallel(50, 8, func(i int) (err error) {
		sbs[i], err = sandbox.New(ctx, b.opts...)
		return err
	})
	defer func() {
		for _, sb := range sbs {
			if sb != nil {
				sb.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	out["create_50_s"] = time.Since(start).Seconds()
	start = time.Now()
	if err := parallel(50, 50, func(i int) error { _, err := sbs[i].Execute(ctx, "echo hi"); return err }); err != nil {
		return nil, err
	}
	out["exec_on_50_alive_s"] = time.Since(start).Seconds()
	return out, nil
}

// parallel runs fn(0..n-1) with at most width at a time.
func parallel(n, width int, fn func(int) error) error {
	sem := make(chan struct{}, width)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func sleep(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Millisecond):
	}
}
