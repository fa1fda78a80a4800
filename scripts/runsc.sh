#!/usr/bin/env bash
# Installs gVisor's runsc from the Go module proxy (cached outside the
# clone, in /var/cache/dockersandbox/runsc/<version>) and registers it with
# the running dockerd as the runtime "runsc" (/etc/docker/daemon.json, then
# SIGHUP: dockerd reloads its runtimes without a restart). Debian's runsc
# (2022) fails here; this one works with the default (systrap) platform.
# The flags: --overlay2=none and --file-access=shared, so that the engine's
# archive API (uploads, downloads, lifetimes) and the sandbox see the same
# files; --host-uds=open, so that the helper can connect to the port socket
# the library listens on in the sandbox's helper mount (Dial's direct path).
# Then: DOCKERSANDBOX_TEST_RUNTIME=runsc go test -short ./integration
# "runsc.sh build" only builds (CI starts it in the first second).
set -euo pipefail
version=${RUNSC_VERSION:-v0.0.0-20260905035102-160fafc42237}
dir=/var/cache/dockersandbox/runsc/$version
if [ ! -x "$dir/runsc" ]; then
	echo "--- building runsc $version (about 3 minutes)"
	mkdir -p "$dir"
	GOBIN=$dir CGO_ENABLED=0 nice -n 10 go install "gvisor.dev/gvisor/runsc@$version"
fi
[ "${1:-}" != build ] || exit 0
args='["--overlay2=none", "--file-access=shared", "--host-uds=open"]'
conf=/etc/docker/daemon.json
if [ -s "$conf" ] && ! grep -q '"runsc"' "$conf"; then
	echo "FAIL: $conf exists without runsc: add it by hand:" >&2
	echo "  \"runtimes\": {\"runsc\": {\"path\": \"$dir/runsc\", \"runtimeArgs\": $args}}" >&2
	exit 1
fi
mkdir -p /etc/docker
want=$(printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": %s}}}' "$dir/runsc" "$args")
# The daemon's runtimes, read whole: grep -q on docker info's pipe ends it
# early, and pipefail takes its SIGPIPE for a failure.
has_runsc() { case "$(docker info --format '{{json .Runtimes}}' 2>/dev/null)" in *'"runsc"'*) return 0 ;; esac; return 1; }
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ] || ! has_runsc; then
	printf '%s\n' "$want" >"$conf"
	# The dockerd of /var/run/docker.sock only (its pid file), not the
	# other dockerds a run may have started (scripts/engines.sh).
	if [ -s /var/run/docker.pid ]; then kill -HUP "$(cat /var/run/docker.pid)"; else pkill -HUP -x dockerd; fi
fi
for _ in $(seq 20); do has_runsc && break; sleep 0.5; done
has_runsc || { echo "FAIL: dockerd did not take the runsc runtime" >&2; exit 1; }
echo "runsc $version registered: WithRuntime(\"runsc\")"
