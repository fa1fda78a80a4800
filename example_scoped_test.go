package sandbox_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/dockersandbox/sandbox"
)

// A program that shares the daemon labels its sandboxes, then lists and
// prunes only those: other programs' sandboxes are never touched. The
// criteria of a Filter combine with AND.
func ExamplePrune() {
	ctx := context.Background()
	app := map[string]string{"com.example.app": "report-builder"} // this program
	run := map[string]string{"com.example.run": rand.Text()}      // this run of it
	sb, err := sandbox.New(ctx, exampleImage, sandbox.WithLabels(app), sandbox.WithLabels(run))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	list, err := sandbox.List(ctx, sandbox.Filter{Labels: run})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("listed", len(list), list[0].ID == sb.ID())

	// At start-up, the orphans of an earlier run of this program (it
	// crashed before Close) and anything of it older than a day:
	_, _ = sandbox.Prune(ctx, sandbox.Filter{Labels: app, DeadOwners: true})
	_, _ = sandbox.Prune(ctx, sandbox.Filter{Labels: app, OlderThan: 24 * time.Hour})

	// At shutdown, everything this run made:
	removed, err := sandbox.Prune(ctx, sandbox.Filter{Labels: run})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("removed", len(removed))
	// Output:
	// listed 1 true
	// removed 1
}

// WaitReady lets a program pay for the pool's first sandbox at start-up,
// not on its first Get.
func ExamplePool_WaitReady() {
	ctx := context.Background()
	pool, err := sandbox.NewPool(ctx, sandbox.PoolSize(1), sandbox.PoolSandboxOptions(exampleImage))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	if err := pool.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	sb, err := pool.Get(ctx) // handed out at once
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	resp, _ := sb.Execute(ctx, "echo ready")
	fmt.Print(resp.Output)
	// Output: ready
}
