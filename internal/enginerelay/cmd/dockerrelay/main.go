// Command dockerrelay serves the Docker engine of the environment
// (DOCKER_HOST etc.) through internal/enginerelay on a unix socket, until
// interrupted: the core suite then runs on the relay with
// DOCKERSANDBOX_TEST_ENGINE=relay:SOCKET, which proves the relay
// transparent (the same tests pass as on Docker directly, bar the
// Docker-only ones, which skip).
//
//	go run ./internal/enginerelay/cmd/dockerrelay -socket /tmp/docker-relay.sock
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/enginerelay"
)

func main() {
	sock := flag.String("socket", "/tmp/dockersandbox-docker-relay.sock", "the unix socket to serve on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, err := sandbox.DockerEngine(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	_ = os.Remove(*sock)
	l, err := net.Listen("unix", *sock)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %s on %s", e.Name(), *sock)
	if err := enginerelay.Serve(ctx, l, e); err != nil {
		log.Fatal(err)
	}
}
