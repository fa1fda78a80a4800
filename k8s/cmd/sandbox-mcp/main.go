// Command sandbox-mcp is the mcp module's sandbox-mcp with the Kubernetes
// engine too: -engine kubernetes, with -kubeconfig (default $KUBECONFIG,
// ~/.kube/config, or in-cluster), -namespace, -helper-repo and
// -network-none-accepted. Over stdio its sandbox is a pod created at start
// and deleted on every way out; over HTTP, one pod per session.
//
//	go build -C k8s -o "$(go env GOPATH)/bin/sandbox-mcp" ./cmd/sandbox-mcp
//	sandbox-mcp -engine kubernetes -namespace agents -image python:3.13
package main

import (
	"os"

	"github.com/dockersandbox/sandbox/k8s/cmd/internal/kubeflag"
	"github.com/dockersandbox/sandbox/mcp/mcpcmd"
)

func main() { mcpcmd.Main(kubeflag.Engines(), os.Args[1:]) }
