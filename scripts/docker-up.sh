# shellcheck shell=bash
# Sourced by .ci/run and scripts/quickstart: makes sure a Docker engine
# answers (installing docker.io with apt and starting dockerd if needed),
# that the test images' ingredients are installed, and that go is on PATH.
# Sets dockerd_pid when it started the engine.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export HOME="${HOME:-/root}"
dockerd_pid=

# System packages: the Docker engine, plus what the test images are built from
# and tmux, which the terminal tests drive.
missing=()
{ command -v docker && command -v dockerd; } >/dev/null || missing+=(docker.io)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v tmux >/dev/null || missing+=(tmux) # the CLI's terminal tests (exec -it)
if [ ${#missing[@]} -gt 0 ]; then
	echo "--- installing ${missing[*]}"
	# Keep package scripts from starting services: we start dockerd below.
	policy=/usr/sbin/policy-rc.d
	own_policy=
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
	[ -z "$own_policy" ] || rm -f "$policy"
fi

# Docker engine: start one unless it already answers.
if ! docker info >/dev/null 2>&1; then
	echo "--- starting dockerd"
	dockerd_log=$(mktemp /tmp/dockerd.XXXXXX.log)
	dockerd >"$dockerd_log" 2>&1 &
	dockerd_pid=$!
	for _ in $(seq 60); do
		docker info >/dev/null 2>&1 && break
		kill -0 "$dockerd_pid" 2>/dev/null || break # died
		sleep 1
	done
	if ! docker info >/dev/null 2>&1; then
		echo "FAIL: dockerd did not come up (exited, or not ready after 60 s); its log:" >&2
		cat "$dockerd_log" >&2
		exit 1
	fi
fi

command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"
go version

