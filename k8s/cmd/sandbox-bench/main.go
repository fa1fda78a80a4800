// Command sandbox-bench is the core module's sandbox-bench with the
// Kubernetes engine too (-engine kubernetes, -kubeconfig, -namespace,
// -helper-repo). On a pod it prints the same keys as on Docker but those a
// pod cannot have: published_port_mb_s and forward_ratio (no published
// port), pause, resume, docker_pause, docker_unpause, the docker_cp keys
// and -durable's. raw_exec is a client-go exec of `true` through the API
// server; create runs from the pod's creation to the first command's
// answer.
//
//	cd k8s && go run ./cmd/sandbox-bench -engine kubernetes -namespace agents -image python:3.13-slim -n 20
package main

import (
	"os"

	"github.com/dockersandbox/sandbox/internal/bench"
	"github.com/dockersandbox/sandbox/k8s/cmd/internal/kubeflag"
)

func main() { bench.Main(kubeflag.Engines(), os.Args[1:]) }
