package sandbox_test

import (
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox"
)

func ExampleWithEngine() {
	ctx := context.Background()
	// The Docker engine, from the environment (DOCKER_HOST…); another
	// engine (Kubernetes') is passed the same way.
	eng, err := sandbox.DockerEngine(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close() // after the sandboxes: Close leaves the engine open

	sb, err := sandbox.New(ctx, sandbox.WithEngine(eng), exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	resp, err := sb.Execute(ctx, "echo hello from $(pwd)")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(resp.Output) // eng.Name() says "docker", or "podman"
	// Output:
	// hello from /workspace
}
