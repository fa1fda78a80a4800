// Command sandbox-bench measures the sandbox's operations against a real
// engine (Docker by default) and prints the median milliseconds of each as
// JSON: on the shared helper channel (the default path) at the top level,
// on an engine exec per operation under "per_exec", one plain engine exec
// of `true` as "raw_exec", create (New and the first command's answer) and
// close, a warm pool's acquire as "pool_acquire", `docker cp` of the same
// 32 MiB file when the docker CLI is installed, fs.WalkDir over 10,000
// files as "walkdir_10k" (beside find over them in the container,
// "find_10k"), Pause and Resume of a sandbox running a command as "pause"
// and "resume" (beside the engine's own "docker_pause" and
// "docker_unpause" of it), one Usage call as "usage" (beside the engine's
// own one-shot stats, "docker_stats"; calls back to back as
// "usage_back_to_back"), and the host process's peak RSS while one
// command prints 256 MiB.
//
//	go run ./cmd/sandbox-bench -image python:3.13-slim -n 20 [-load]
//
// With -runtime runc,runsc (OCI runtimes of the Docker daemon) it runs the
// bench once per runtime, alternated, -rounds times, and prints each
// runtime's runs: {"runc": [{...}, ...], "runsc": [...]}.
//
// This binary has the Docker engine (Podman through DOCKER_HOST); the k8s
// module's k8s/cmd/sandbox-bench is the same command with -engine
// kubernetes, where the keys Kubernetes cannot have are left out:
// published_port_mb_s and forward_ratio (no published port), pause,
// resume, docker_pause, docker_unpause, the usage keys, the docker_cp keys
// and -durable's.
package main

import (
	"os"

	"github.com/dockersandbox/sandbox/internal/bench"
	"github.com/dockersandbox/sandbox/internal/engineflag"
)

func main() { bench.Main(engineflag.ForCommand("sandbox-bench"), os.Args[1:]) }
