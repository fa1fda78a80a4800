#!/usr/bin/env bash
# down.sh - take down the cluster scripts/k8s/up.sh started and leave the
# machine as it was: the processes it recorded (each checked to still run a
# command line under $K8S_DIR/), the shims of its private containerd, any
# process left in its pods' cgroups or in its namespace, the node's mount
# namespace (and with it every mount made inside), the network namespace and
# its veth pair (and with them the CNI bridge and the namespace's iptables
# rules), the cgroup root, the kernel tunables the kubelet changed, the fixed
# paths up.sh created, and $K8S_DIR. The cache ($K8S_CACHE) is kept. Docker,
# its containerd, docker0 and the host's iptables are never touched.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

T0=$(now)
log() { echo "k8s-down: [$(secs_since "$T0")s] $*" >&2; }
[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }

if [ ! -d "$K8S_DIR" ]; then
	if [ -e "/run/netns/$K8S_NETNS" ] || ip link show "$K8S_VETH_HOST" >/dev/null 2>&1; then
		log "namespace $K8S_NETNS or link $K8S_VETH_HOST exists but $K8S_DIR does not: not ours to remove" \
			"(remove it by hand with 'ip netns del $K8S_NETNS' if it is a leftover)"
		exit 1
	fi
	log "nothing to do ($K8S_DIR absent)"
	exit 0
fi

ours() { # ours PID -> alive and its command line mentions $K8S_DIR/
	{ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF -- "$K8S_DIR/"
}
gone() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
stop_pid() { # stop_pid PID NAME [grace-seconds]
	local p=$1 name=$2 g=${3:-10} i
	ours "$p" || return 0
	log "stopping $name (pid $p)"
	kill -TERM "$p" 2>/dev/null
	for ((i = 0; i < g * 10; i++)); do ours "$p" || return 0; sleep 0.1; done
	log "$name (pid $p) did not exit - SIGKILL"
	kill -KILL "$p" 2>/dev/null
	for ((i = 0; i < 50; i++)); do ours "$p" || return 0; sleep 0.1; done
}
recorded() { [ -f "$PIDS/$1.pid" ] && cat "$PIDS/$1.pid"; }

# 1. Let the kubelet tear the pods down (CNI DEL) while everything is up.
kp=$(recorded kubelet) ap=$(recorded kube-apiserver)
if [ -n "$kp" ] && ours "$kp" && [ -n "$ap" ] && ours "$ap" && [ -x "$BIN/kubectl" ]; then
	log "deleting all pods"
	timeout 60 "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" delete pods --all --all-namespaces \
		--grace-period=0 --force --wait=true >/dev/null 2>&1 || log "pod deletion incomplete - continuing"
fi

# 2. The kubelet first (so it restarts nothing), then what it left in containerd.
[ -n "$kp" ] && stop_pid "$kp" kubelet 15
cp=$(recorded containerd)
if [ -n "$cp" ] && ours "$cp"; then
	for id in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1
	done
	sleep 0.5
	for id in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n k8s.io tasks rm -f "$id" >/dev/null 2>&1
	done
	for id in $(ctr -a "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n k8s.io containers rm "$id" >/dev/null 2>&1
	done
fi

# 3. Shims of OUR containerd (re-parented to init; "-address $SOCK" in their command line).
for p in $(pgrep -f -- "containerd-shim.* -address $SOCK( |\$)" || true); do stop_pid "$p" containerd-shim 5; done

# 4. The rest in reverse start order (the node anchor, started first, last).
if [ -f "$PIDS/order" ]; then
	for name in $(tac "$PIDS/order"); do
		p=$(recorded "$name") && [ -n "$p" ] && stop_pid "$p" "$name" 15
	done
fi

# 5. Anything still in our pods' cgroups or in our network namespace (whose
#    name pins its inode, so the match cannot hit a stranger) is ours by
#    construction: kill it.
leftovers() {
	local d
	for d in /sys/fs/cgroup/*/"${K8S_CGROUP_ROOT#/}" "/sys/fs/cgroup$K8S_CGROUP_ROOT"; do
		[ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
	done
	[ -e "/run/netns/$K8S_NETNS" ] && ip netns pids "$K8S_NETNS" 2>/dev/null
	return 0
}
for round in 1 2 3 4 5 6 7 8 9 10; do
	left=$(leftovers | sort -un | while read -r p; do gone "$p" || echo "$p"; done | tr '\n' ' ')
	[ -z "$left" ] && break
	[ $round = 1 ] && log "killing leftover processes: $left"
	# shellcheck disable=SC2086
	kill -KILL $left 2>/dev/null
	sleep 0.3
done
[ -z "$left" ] || log "WARNING: processes remain in the node's namespaces or cgroups: $left"

# 6. The network namespace: its veth end, CNI bridge and iptables rules go
#    with it, and its peer on the host with the veth.
if [ -f "$K8S_DIR/created.netns" ] && [ -e "/run/netns/$K8S_NETNS" ]; then
	ip netns del "$K8S_NETNS" && log "removed network namespace $K8S_NETNS"
fi
for _ in $(seq 50); do ip link show "$K8S_VETH_HOST" >/dev/null 2>&1 || break; sleep 0.1; done
if ip link show "$K8S_VETH_HOST" >/dev/null 2>&1 && [ -f "$K8S_DIR/created.netns" ]; then
	ip link del "$K8S_VETH_HOST" && log "removed link $K8S_VETH_HOST"
fi

if [ -f "$K8S_DIR/created.run-netns-mount" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ] && mountpoint -q /run/netns; then
	umount /run/netns && log "unmounted /run/netns (ip netns add had made it a mount point)"
fi
if [ -f "$K8S_DIR/created.run-netns-dir" ] && [ -d /run/netns ] && ! mountpoint -q /run/netns; then
	rmdir /run/netns 2>/dev/null && log "removed /run/netns"
fi

# 7. cgroups, kernel tunables, fixed paths.
log "removing cgroups, restoring sysctls"
for d in /sys/fs/cgroup/*/"${K8S_CGROUP_ROOT#/}" "/sys/fs/cgroup$K8S_CGROUP_ROOT"; do
	[ -d "$d" ] || continue
	find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	[ -d "$d" ] && log "WARNING: could not remove cgroup $d (still in use?)"
done
if [ -f "$K8S_DIR/sysctl.saved" ]; then
	while IFS='=' read -r k v; do
		[ -n "$k" ] && [ "$(sysctl -n "$k" 2>/dev/null)" != "$v" ] && sysctl -qw "$k=$v" && log "restored $k=$v"
	done <"$K8S_DIR/sysctl.saved"
fi
if [ -f "$K8S_DIR/created.dirs" ]; then
	# they were only mount points (the node bound its own directories on them)
	while read -r d; do
		[ -d "$d" ] || continue
		rmdir "$d" 2>/dev/null || log "WARNING: $d (created by up.sh) is not empty: left in place"
	done <"$K8S_DIR/created.dirs"
fi

# 8. State. Mounts were made in the node's mount namespace, gone with it; check.
if awk -v b="$K8S_DIR/" 'index($2, b) == 1 {f=1} END {exit !f}' /proc/mounts; then
	log "WARNING: mounts remain under $K8S_DIR on the host; not deleting it"
	exit 1
fi
if [ -n "${left:-}" ]; then log "WARNING: not deleting $K8S_DIR while processes remain"; exit 1; fi
log "removing $K8S_DIR"
rm -rf "$K8S_DIR"
log "down in $(secs_since "$T0")s ($K8S_DIR removed; cache kept in $K8S_CACHE)"
