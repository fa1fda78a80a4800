// Command sandbox-helper is injected into every sandbox container; see
// package helper. It is built for linux/amd64 and linux/arm64 by
// go generate in internal/helperbin.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/dockersandbox/sandbox/internal/helper"
	"github.com/dockersandbox/sandbox/internal/proto"
)

const usage = "usage: sandbox-helper init [lifetime] | call | serve | version"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "init":
		var lifetime time.Duration
		if len(os.Args) > 2 {
			d, err := time.ParseDuration(os.Args[2])
			if err != nil {
				fmt.Fprintln(os.Stderr, "sandbox-helper:", err)
				os.Exit(2)
			}
			lifetime = d
		}
		os.Exit(helper.Init(lifetime))
	case "call", "serve":
		if err := helper.Serve(os.Stdin, os.Stdout, os.Args[1] == "call"); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox-helper:", err)
			os.Exit(1)
		}
	case "version":
		fmt.Println(proto.Version)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}
