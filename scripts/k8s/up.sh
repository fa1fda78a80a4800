#!/usr/bin/env bash
# up.sh - bring up a real single-node Kubernetes ($K8S_VERSION, default
# v1.37.2) on this machine, inside a network namespace of its own. Idempotent:
# a healthy cluster is left as it is; a partial one is taken down and redone.
#
#   scripts/k8s/up.sh                 # prints the kubeconfig path as its last line
#   kubectl --kubeconfig /var/lib/dockersandbox-k8s/kubeconfig get nodes
#   scripts/k8s/smoke.sh; scripts/k8s/down.sh
#
# The network rule: every address a component or test dials is loopback or
# inside the namespace $K8S_NETNS created here. The node is a network
# namespace plus a mount namespace (held by a small anchor process); etcd,
# the apiserver, scheduler, controller-manager, a private containerd and the
# kubelet all run in both. The host reaches the apiserver over a veth pair
# ($K8S_HOST_IP on the host, $K8S_NODE_IP in the namespace). The namespace has
# no default route, no NAT and a FORWARD policy of DROP (only pod<->pod on the
# CNI bridge passes); pods have no default route either. See README.md.
#
# Nothing is exported: point clients at $K8S_DIR/kubeconfig.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

K8S_IMAGES=${K8S_IMAGES-dockersandbox-test/busybox:1 dockersandbox-test/debian:bookworm}

log() { echo "k8s-up: $*" >&2; }
die() { log "ERROR: $*"; log "state kept in $K8S_DIR for debugging; clean up with scripts/k8s/down.sh"; exit 1; }
trap 'log "FAILED at line $LINENO; clean up with scripts/k8s/down.sh"' ERR
[ "$(id -u)" = 0 ] || die "must run as root (the namespace, containerd and the kubelet need it)"
[ ${#SOCK} -lt 100 ] || die "K8S_DIR too long for a unix socket path"

alive() { # alive NAME -> the recorded pid still runs a command line under $K8S_DIR/
	local f=$PIDS/$1.pid p
	[ -f "$f" ] || return 1
	p=$(cat "$f")
	{ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qF -- "$K8S_DIR/"
}

# ------------------------------------------------------------- idempotency
if [ -d "$K8S_DIR" ] || [ -e "/run/netns/$K8S_NETNS" ] || ip link show "$K8S_VETH_HOST" >/dev/null 2>&1; then
	all=1
	[ -f "$PIDS/order" ] || all=0
	for n in $(cat "$PIDS/order" 2>/dev/null); do alive "$n" || all=0; done
	if [ $all = 1 ] && [ "$(cat "$K8S_DIR/version" 2>/dev/null)" = "$K8S_VERSION" ] &&
		kctl get --raw /readyz >/dev/null 2>&1; then
		log "already up"
		echo "$KUBECONFIG_ADMIN"
		exit 0
	fi
	log "stale or partial state - taking it down first"
	"$HERE/down.sh" >&2
fi

T0=$(now)
phase() { log "$1 ($(secs_since "$T0")s)"; }

# ------------------------------------------------------------- the addresses
# The /30 and the pod and service ranges must not overlap anything this
# machine already routes (besides its default route).
for net in "$K8S_NODE_IP/$K8S_VETH_PREFIX" "$K8S_POD_CIDR" "$K8S_SERVICE_CIDR"; do
	clash=$( { ip -4 route show root "$net"; ip -4 route show match "${net%/*}" | grep -v '^default'; } 2>/dev/null || true)
	[ -z "$clash" ] || die "$net overlaps a route of this machine ($clash); set K8S_HOST_IP/K8S_NODE_IP/K8S_POD_CIDR/K8S_SERVICE_CIDR"
done

# ------------------------------------------------------------- packages
need=()
for c in containerd ctr containerd-shim-runc-v2; do command -v $c >/dev/null || need+=(containerd); done
command -v runc >/dev/null || need+=(runc)
[ -x "$CNI_BIN/bridge" ] && [ -x "$CNI_BIN/host-local" ] && [ -x "$CNI_BIN/loopback" ] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
command -v openssl >/dev/null || need+=(openssl)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null && command -v unshare >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
	mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
	log "apt-get install ${need[*]}"
	# Keep package scripts from starting services (Debian's containerd would
	# start a system containerd); we run our own, privately.
	policy=/usr/sbin/policy-rc.d own_policy=
	if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1; fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2; }
	[ -z "$own_policy" ] || rm -f "$policy"
fi

# etcd: Debian's etcd-server .deb, unpacked into the cache (no service).
ETCD=$K8S_CACHE/etcd/usr/bin/etcd
if [ ! -x "$ETCD" ]; then
	log "fetching Debian's etcd-server"
	rm -rf "$K8S_CACHE/etcd" "$K8S_CACHE/etcd-dl" && mkdir -p "$K8S_CACHE/etcd-dl"
	(cd "$K8S_CACHE/etcd-dl" && apt-get download etcd-server >&2) ||
		(apt-get update >&2 && cd "$K8S_CACHE/etcd-dl" && apt-get download etcd-server >&2)
	dpkg-deb -x "$(ls "$K8S_CACHE"/etcd-dl/etcd-server_*.deb | head -1)" "$K8S_CACHE/etcd.tmp"
	mv "$K8S_CACHE/etcd.tmp" "$K8S_CACHE/etcd"
fi
phase "packages ready"

# ------------------------------------------------------------- binaries
"$HERE/build.sh"
phase "binaries ready"

# The pause (sandbox) image: a tiny static Go binary packed as an OCI archive.
P=$K8S_CACHE/pause
if [ ! -f "$P/pause-oci.tar" ]; then
	log "building the pause image"
	rm -rf "$P" && mkdir -p "$P/src" "$P/root" "$P/oci/blobs/sha256"
	cat >"$P/src/main.go" <<'EOF'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 4)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range c {
		if s == syscall.SIGCHLD { // reap zombies when we are a shared-pid init
			for {
				var ws syscall.WaitStatus
				if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
EOF
	printf 'module pause\n\ngo 1.21\n' >"$P/src/go.mod"
	(cd "$P/src" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags='-s -w' -o "$P/root/pause" . >&2)
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$P/root" -cf "$P/layer.tar" pause
	blob() { local d; d=$(sha256sum "$1" | cut -d' ' -f1); cp "$1" "$P/oci/blobs/sha256/$d"; echo "$d $(stat -c %s "$1")"; }
	read -r LD LS < <(blob "$P/layer.tar")
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$LD" >"$P/config.json"
	read -r CD CS < <(blob "$P/config.json")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' "$CD" "$CS" "$LD" "$LS" >"$P/manifest.json"
	read -r MD MS < <(blob "$P/manifest.json")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"1"}}]}' "$MD" "$MS" "$PAUSE_IMAGE" >"$P/oci/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$P/oci/oci-layout"
	tar -C "$P/oci" -cf "$P/pause-oci.tar.tmp" oci-layout index.json blobs
	mv "$P/pause-oci.tar.tmp" "$P/pause-oci.tar"
fi

# ------------------------------------------------------------- state dir
mkdir -p "$PKI" "$LOGS" "$PIDS" "$CTRD" "$K8S_DIR/etcd" "$K8S_DIR/kubelet" "$K8S_DIR/pod-logs" \
	"$K8S_DIR/cni/net.d" "$K8S_DIR/cni/ipam" "$K8S_DIR/fixed"
chmod 700 "$K8S_DIR/etcd"
echo "$K8S_VERSION" >"$K8S_DIR/version"

# ------------------------------------------------------------- the node's namespace
# veth pair: $K8S_VETH_HOST ($K8S_HOST_IP) on the host, $K8S_VETH_NODE
# ($K8S_NODE_IP) inside. No default route inside; IPv6 off on both ends so
# neither side sends router solicitations to the other.
log "creating network namespace $K8S_NETNS"
# `ip netns add` makes /run/netns a mount point the first time; down.sh
# undoes that only if it was not one before.
[ -d /run/netns ] || touch "$K8S_DIR/created.run-netns-dir"
mountpoint -q /run/netns || touch "$K8S_DIR/created.run-netns-mount"
ip netns add "$K8S_NETNS"
touch "$K8S_DIR/created.netns"
ip link add "$K8S_VETH_HOST" type veth peer name "$K8S_VETH_NODE" netns "$K8S_NETNS"
sysctl -qw "net.ipv6.conf.$K8S_VETH_HOST.disable_ipv6=1"
ip addr add "$K8S_HOST_IP/$K8S_VETH_PREFIX" dev "$K8S_VETH_HOST"
ip link set "$K8S_VETH_HOST" up
ip -n "$K8S_NETNS" link set lo up
nsexec sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$K8S_NETNS" addr add "$K8S_NODE_IP/$K8S_VETH_PREFIX" dev "$K8S_VETH_NODE"
ip -n "$K8S_NETNS" link set "$K8S_VETH_NODE" up
# Inside: forward only bridge-local traffic (pod<->pod); nothing from a pod
# leaves through the veth, nothing from the host is forwarded to a pod.
nsexec iptables -P FORWARD DROP
nsexec iptables -A FORWARD -i "$K8S_BRIDGE" -o "$K8S_BRIDGE" -j ACCEPT
# and through the veth only the host's end may talk to the node (the host
# forwards packets; this keeps anything it might forward out of the node).
nsexec iptables -A INPUT -i "$K8S_VETH_NODE" ! -s "$K8S_HOST_IP" -j DROP
[ -z "$(ip -n "$K8S_NETNS" -4 route show default)" ] || die "the namespace has a default route"

# Fixed paths the kubelet and libcni use whatever their flags say. In the
# node's mount namespace each is a bind mount of a directory of ours, so the
# host's copies (if any) are never written; we create the mount point only if
# it is absent, and down.sh removes exactly those.
FIXED="/var/lib/kubelet /var/lib/cni /var/log/containers /var/log/pods"
for d in $FIXED; do
	if [ ! -e "$d" ]; then mkdir -p "$d" && echo "$d" >>"$K8S_DIR/created.dirs"; fi
done
printf '# dockersandbox k8s node: no DNS beyond the namespace (the network rule)\nnameserver 127.0.0.1\n' >"$K8S_DIR/resolv.conf"

# The anchor: holds the node's mount namespace (a slave of the host's, so
# nothing mounted inside - overlay rootfs, volumes, netns files - shows on
# the host, and all of it goes when the namespace's last process exits).
# `ip netns exec` is not used: it detaches /sys and with it every cgroup
# mount (runc and the kubelet need them), and gives each command its own mount
# namespace (the kubelet's volume mounts would be invisible to containerd).
ANCHOR_SH='set -e
for d in '"$FIXED"'; do
  s='"$K8S_DIR"'/fixed/$(echo "$d" | tr / _); mkdir -p "$s"; mount --bind "$s" "$d"
done
mount --bind '"$K8S_DIR"'/resolv.conf /etc/resolv.conf
exec -a "dsbx-k8s-node '"$K8S_DIR"'/" sleep infinity'
setsid nsenter --net="/run/netns/$K8S_NETNS" unshare --mount --propagation slave bash -c "$ANCHOR_SH" </dev/null >"$LOGS/node.log" 2>&1 &
echo $! >"$PIDS/node.pid"
echo node >>"$PIDS/order"
ANCHOR=$(cat "$PIDS/node.pid")
for _ in $(seq 100); do
	alive node && [ "$(readlink "/proc/$ANCHOR/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] &&
		grep -q ' /etc/resolv.conf ' "/proc/$ANCHOR/mounts" && break
	sleep 0.1
done
alive node || die "the node anchor exited: $(cat "$LOGS/node.log")"
innode() { nsenter -t "$ANCHOR" -n -m -- "$@"; }

start() { # start NAME CMD... : run detached in the node's namespaces, record the pid
	local name=$1; shift
	setsid nsenter -t "$ANCHOR" -n -m -- "$@" </dev/null >"$LOGS/$name.log" 2>&1 &
	local pid=$!
	echo $pid >"$PIDS/$name.pid"
	echo "$name" >>"$PIDS/order"
	# Until it execs, the child runs this script: alive would call it dead
	# (etcd "exited" once, at once). Wait for the exec, at most 10 s.
	local i
	for ((i = 0; i < 500; i++)); do
		alive "$name" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
}
check_alive() { alive "$1" || die "$1 exited; tail of $LOGS/$1.log:
$(tail -20 "$LOGS/$1.log")"; }
wait_for() { # wait_for DESC TIMEOUT NAME CMD... (fails fast if NAME dies)
	local desc=$1 t=$2 name=$3; shift 3
	local end=$((SECONDS + t))
	until "$@" >/dev/null 2>&1; do
		check_alive "$name"
		[ $SECONDS -lt $end ] || die "timed out waiting for $desc (logs: $LOGS)"
		sleep 0.2
	done
}

# ------------------------------------------------------------- PKI (ECDSA P-256)
log "generating PKI"
(
	cd "$PKI"
	key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }
	key ca
	openssl req -x509 -new -key ca.key -subj "/CN=dockersandbox-k8s-ca" -days 3650 -out ca.crt 2>/dev/null
	sign() { # name subj ext
		key "$1"
		openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
		printf '%s\n' "$3" >"$1.ext"
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
			-extfile "$1.ext" -out "$1.crt" 2>/dev/null
	}
	sign apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$K8S_NODE_IP,IP:$K8S_SERVICE_IP"
	CLIENT="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
	sign admin "/O=system:masters/CN=dockersandbox-k8s-admin" "$CLIENT"
	sign kubelet "/O=system:nodes/CN=system:node:$K8S_NODE_NAME" "$CLIENT"
	sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$CLIENT"
	sign scheduler "/CN=system:kube-scheduler" "$CLIENT"
	sign controller-manager "/O=system:masters/CN=system:kube-controller-manager" "$CLIENT"
	key sa
	openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
	chmod 600 ./*.key
)
mkkubeconfig() { # file user
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: dockersandbox-k8s
  cluster:
    server: https://$K8S_NODE_IP:$K8S_API_PORT
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$2.crt
    client-key: $PKI/$2.key
contexts:
- name: dockersandbox-k8s
  context: {cluster: dockersandbox-k8s, user: $2, namespace: default}
current-context: dockersandbox-k8s
EOF
}
mkkubeconfig "$KUBECONFIG_ADMIN" admin
mkkubeconfig "$K8S_DIR/kubelet.kubeconfig" kubelet
mkkubeconfig "$K8S_DIR/scheduler.kubeconfig" scheduler
mkkubeconfig "$K8S_DIR/controller-manager.kubeconfig" controller-manager

# ------------------------------------------------------------- private containerd (CRI)
log "starting the private containerd"
# The CNI bridge lives in the namespace. No masquerade, and pods get routes
# only to their subnet and to the node's address: no default route.
cat >"$K8S_DIR/cni/net.d/10-dsbx-k8s.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "dsbx-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$K8S_BRIDGE",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$K8S_DIR/cni/ipam",
        "ranges": [[{"subnet": "$K8S_POD_CIDR"}]],
        "routes": [{"dst": "$K8S_NODE_IP/32"}]
      }
    }
  ]
}
EOF
cat >"$CTRD/config.toml" <<EOF
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # pod network namespaces under our state dir, not /var/run/netns
  netns_mounts_under_state_dir = true
  # CRI sets oom_score_adj -998 on sandboxes; without CAP_SYS_RESOURCE (as in
  # this VM) runc fails with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$CTRD/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$K8S_DIR/cni/net.d"
EOF
start containerd containerd --config "$CTRD/config.toml" --log-level warn
wait_for containerd 30 containerd ctr -a "$SOCK" version

log "importing images into the private containerd (namespace k8s.io), in the background"
imgs=()
for img in $K8S_IMAGES; do
	if docker image inspect "$img" >/dev/null 2>&1; then imgs+=("$img"); else log "WARNING: docker image $img not found - skipped"; fi
done
(
	set -e
	ctr -a "$SOCK" -n k8s.io images import "$P/pause-oci.tar"
	[ ${#imgs[@]} -eq 0 ] || docker save "${imgs[@]}" | ctr -a "$SOCK" -n k8s.io images import -
) >"$LOGS/import.log" 2>&1 &
IMPORT=$!

# ------------------------------------------------------------- etcd, apiserver
log "starting etcd"
start etcd "$ETCD" --name dsbx-k8s --data-dir "$K8S_DIR/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster dsbx-k8s=http://127.0.0.1:2380 \
	--listen-metrics-urls "" --quota-backend-bytes 1073741824 --log-level warn
wait_for etcd 30 etcd innode bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379'
phase "etcd ready"

log "starting kube-apiserver"
start kube-apiserver "$BIN/kube-apiserver" \
	--etcd-servers http://127.0.0.1:2379 \
	--bind-address "$K8S_NODE_IP" --secure-port "$K8S_API_PORT" --advertise-address "$K8S_NODE_IP" \
	--endpoint-reconciler-type none \
	--service-cluster-ip-range "$K8S_SERVICE_CIDR" \
	--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
	--client-ca-file "$PKI/ca.crt" \
	--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
	--kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
	--kubelet-preferred-address-types InternalIP \
	--service-account-issuer https://kubernetes.default.svc.cluster.local \
	--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
	--authorization-mode Node,RBAC \
	--allow-privileged=true --profiling=false
wait_for kube-apiserver 120 kube-apiserver kctl get --raw /readyz
phase "kube-apiserver ready"

log "starting kube-scheduler and kube-controller-manager"
start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$K8S_DIR/scheduler.kubeconfig" \
	--authentication-kubeconfig "$K8S_DIR/scheduler.kubeconfig" --authorization-kubeconfig "$K8S_DIR/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false
start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$K8S_DIR/controller-manager.kubeconfig" \
	--authentication-kubeconfig "$K8S_DIR/controller-manager.kubeconfig" --authorization-kubeconfig "$K8S_DIR/controller-manager.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port 10257 --leader-elect=false \
	--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
	--cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
	--use-service-account-credentials=false --service-cluster-ip-range "$K8S_SERVICE_CIDR"

wait "$IMPORT" || die "image import failed: $(tail -5 "$LOGS/import.log")"
phase "images imported (${imgs[*]:-none})"

# ------------------------------------------------------------- kubelet
# cgroup v1: the kubelet needs its cgroupRoot in every hierarchy.
if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
	for d in /sys/fs/cgroup/*/; do
		[ "$(stat -f -c %T "$d")" = cgroupfs ] || continue
		[ -d "$d${K8S_CGROUP_ROOT#/}" ] || mkdir "$d${K8S_CGROUP_ROOT#/}"
		if [ -f "$d/cpuset.cpus" ]; then
			cat "$d/cpuset.cpus" >"$d${K8S_CGROUP_ROOT#/}/cpuset.cpus"
			cat "$d/cpuset.mems" >"$d${K8S_CGROUP_ROOT#/}/cpuset.mems"
		fi
	done
else
	mkdir -p "/sys/fs/cgroup${K8S_CGROUP_ROOT}"
fi
# The kubelet rewrites these (global, not per namespace); down.sh restores them.
for s in vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes; do
	echo "$s=$(sysctl -n "$s")"
done >"$K8S_DIR/sysctl.saved"

cat >"$K8S_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $K8S_CGROUP_ROOT
containerRuntimeEndpoint: unix://$SOCK
address: $K8S_NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: AlwaysAllow
podLogsDir: $K8S_DIR/pod-logs
failSwapOn: false
makeIPTablesUtilChains: false
resolvConf: $K8S_DIR/resolv.conf
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
podPidsLimit: 4096
EOF
log "starting kubelet"
start kubelet "$BIN/kubelet" --config "$K8S_DIR/kubelet.yaml" --kubeconfig "$K8S_DIR/kubelet.kubeconfig" \
	--root-dir "$K8S_DIR/kubelet" --cert-dir "$K8S_DIR/kubelet/pki" \
	--hostname-override "$K8S_NODE_NAME" --node-ip "$K8S_NODE_IP" --v 1
node_ready() { kctl get node "$K8S_NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' | grep -qx True; }
wait_for "node $K8S_NODE_NAME Ready" 180 kubelet node_ready
phase "node Ready"
# ServiceAccount admission needs the default ServiceAccount and kube-root-ca.crt
wait_for "the default ServiceAccount" 90 kube-controller-manager \
	kctl get -n default serviceaccount/default configmap/kube-root-ca.crt
for n in $(cat "$PIDS/order"); do check_alive "$n"; done

log "cluster up in $(secs_since "$T0")s: node $K8S_NODE_NAME ($K8S_NODE_IP) Ready in namespace $K8S_NETNS"
log "kubectl: $BIN/kubectl --kubeconfig $KUBECONFIG_ADMIN"
echo "$KUBECONFIG_ADMIN"
