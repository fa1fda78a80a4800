# shellcheck shell=bash
# Sourced by .ci/run: starts the other engines the suite also runs against,
# and exports, for each, a line of environment settings in ENGINES
# ("name|VAR=value VAR=value").
#   podman: Podman's Docker-compatible API (podman system service) on a unix socket
#   tls:    a second dockerd reached over TCP with mutual TLS on loopback,
#           with certificates made here
# Each start_* function registers its own cleanup in engine_cleanups.
engine_root=$(mktemp -d /tmp/dockersandbox-engines.XXXXXX)
engine_cleanups=()
ENGINES=()

stop_engines() {
	local c
	for c in "${engine_cleanups[@]}"; do eval "$c" || true; done
	# Unmount whatever a stopped daemon left, then remove its files.
	grep -o " ${engine_root}[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
	rm -rf "$engine_root"
}

# wait_for CMD... retries CMD for up to 60 s.
wait_for() {
	for _ in $(seq 120); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
	return 1
}

start_podman() {
	command -v podman >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y podman
	local dir=$engine_root/podman
	mkdir -p "$dir"
	# Podman's default ulimits (nofile and nproc near 1048576) can exceed what
	# the host allows; use the host's own limits instead.
	printf '[containers]\ndefault_ulimits = [\n  "nofile=%s:%s",\n  "nproc=16384:16384",\n]\n' \
		"$(ulimit -Hn)" "$(ulimit -Hn)" >"$dir/containers.conf"
	CONTAINERS_CONF=$dir/containers.conf podman system service --time=0 "unix://$dir/podman.sock" >"$dir/service.log" 2>&1 &
	local pid=$!
	engine_cleanups+=("kill $pid; podman ps -aq --filter label=com.dockersandbox.sandbox | xargs -r podman rm -f -v >/dev/null")
	if ! wait_for env DOCKER_HOST="unix://$dir/podman.sock" docker version; then
		cat "$dir/service.log" >&2
		echo "FAIL: podman system service did not come up" >&2
		return 1
	fi
	ENGINES+=("podman|DOCKER_HOST=unix://$dir/podman.sock")
}

start_tls_dockerd() {
	local dir=$engine_root/tls certs
	certs=$dir/certs
	mkdir -p "$certs"
	(
		cd "$certs" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 -subj /CN=dockersandbox-test-ca
		openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj /CN=localhost
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out server-cert.pem -days 2 -extfile server.ext
		openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr -subj /CN=client
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out cert.pem -days 2 -extfile client.ext
	) >"$dir/openssl.log" 2>&1
	# Its own bridge: never --bridge=none, which makes dockerd delete the
	# main daemon's docker0.
	local bridge=dsbtls0
	ip link show "$bridge" >/dev/null 2>&1 || {
		ip link add "$bridge" type bridge
		ip addr add 172.31.254.1/24 dev "$bridge"
		ip link set "$bridge" up
	}
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 23760)
	dockerd --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/docker.pid" \
		-H "tcp://127.0.0.1:$port" --tlsverify --tlscacert "$certs/ca.pem" \
		--tlscert "$certs/server-cert.pem" --tlskey "$certs/server-key.pem" \
		--bridge="$bridge" --iptables=false --ip-masq=false >"$dir/dockerd.log" 2>&1 &
	local pid=$!
	engine_cleanups+=("kill $pid; for _ in \$(seq 30); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done; ip link del $bridge")
	local env="DOCKER_HOST=tcp://127.0.0.1:$port DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$certs"
	# shellcheck disable=SC2086 # $env is several VAR=value words
	if ! wait_for env $env docker version; then
		cat "$dir/dockerd.log" >&2
		echo "FAIL: the TLS dockerd did not come up" >&2
		return 1
	fi
	ENGINES+=("tls|$env")
}
