// Command sandbox is the sandbox command (see the core module's
// cmd/sandbox) with the Kubernetes engine too: every command but mcp takes
// -engine docker (the default) or -engine kubernetes, with -kubeconfig
// (default $KUBECONFIG, ~/.kube/config, or in-cluster), -namespace,
// -helper-repo and -network-none-accepted.
//
//	go build -C k8s -o "$(go env GOPATH)/bin/sandbox" ./cmd/sandbox
//	sandbox create -engine kubernetes -namespace agents -image python:3.13
//
// "sandbox mcp" runs the sandbox-mcp on PATH: the k8s module's
// k8s/cmd/sandbox-mcp has -engine kubernetes too.
package main

import (
	"os"

	"github.com/dockersandbox/sandbox/internal/cli"
	"github.com/dockersandbox/sandbox/k8s/cmd/internal/kubeflag"
)

func main() {
	cli.Main(cli.Config{
		Engines:    kubeflag.Engines(),
		MCPInstall: `go build -C k8s -o "$(go env GOPATH)/bin/sandbox-mcp" ./cmd/sandbox-mcp`,
	}, os.Args[1:])
}
