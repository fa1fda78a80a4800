#!/usr/bin/env bash
# smoke.sh - prove the cluster of scripts/k8s/up.sh works and keeps the
# network rule: a pod of dockersandbox-test/busybox:1 (imagePullPolicy Never)
# -> Running, exec round trips, a file copied in and out through exec, pod to
# pod on the CNI bridge, delete; then that nothing in the namespace or in a
# pod has a route beyond it (checked with `ip route get`, which sends
# nothing), no NAT, and that the host's own iptables and sockets hold nothing
# of ours. Prints timings; exits non-zero on the first failure.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
IMAGE=${K8S_SMOKE_IMAGE:-dockersandbox-test/busybox:1}
K() { kctl "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }
dt() { secs_since "$1"; }
POD=smoke-$$
trap 'K delete pod "$POD" "$POD-web" --ignore-not-found --grace-period=0 --force --wait=false >/dev/null 2>&1 || true' EXIT

# ------------------------------------------------------------- the API, from the host
[ -f "$KUBECONFIG_ADMIN" ] || fail "no kubeconfig at $KUBECONFIG_ADMIN (run scripts/k8s/up.sh)"
sv=$(K version -o json | sed -n '/serverVersion/,/}/s/.*"gitVersion": "\(.*\)".*/\1/p')
[ "$sv" = "$K8S_VERSION" ] || fail "server version '$sv', want $K8S_VERSION"
ip=$(K get node "$K8S_NODE_NAME" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
[ "$ip" = "$K8S_NODE_IP" ] || fail "node InternalIP $ip, want $K8S_NODE_IP"
ok "apiserver $sv at https://$K8S_NODE_IP:$K8S_API_PORT (inside $K8S_NETNS); node $K8S_NODE_NAME InternalIP $ip"

# ------------------------------------------------------------- pod -> Running
pod() { # pod NAME COMMAND
	cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: dsbx-k8s-smoke}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
    command: ["sh", "-c", "$2"]
YAML
}
t=$(now)
pod "$POD" "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done" | K apply -f - >/dev/null
K wait --for=condition=Ready "pod/$POD" --timeout=120s >/dev/null
ok "pod create -> Running: $(dt "$t")s ($(K get pod "$POD" -o jsonpath='{.status.phase} on {.spec.nodeName}, podIP {.status.podIP}'))"

# ------------------------------------------------------------- exec
out=$(K exec "$POD" -- sh -c 'echo hello; id -u')
[ "$out" = "hello
0" ] || fail "exec output: $out"
times=()
for _ in 1 2 3 4 5; do
	t=$(now)
	K exec "$POD" -- true
	times+=("$(dt "$t")")
done
ok "exec round trip (kubectl exec -- true, kubectl's start included): ${times[*]} s"

# ------------------------------------------------------------- copy in / out
# containerd's CRI exec closes stdin once the command's stdout closes
# (containerd issues 12734, 13934): `sh -c 'cat > f'` keeps only part of the
# data. Keeping stdout open until cat ends (`cat > f; echo copied`) avoids it.
IN=$(mktemp) OUT=$(mktemp)
trap 'rm -f "$IN" "$OUT"; K delete pod "$POD" "$POD-web" --ignore-not-found --grace-period=0 --force --wait=false >/dev/null 2>&1 || true' EXIT
head -c 3000000 /dev/urandom >"$IN"
t=$(now)
r=$(K exec -i "$POD" -- sh -c 'cat > /tmp/x; echo copied' <"$IN")
[ "$r" = copied ] || fail "copy in: $r"
tin=$(dt "$t")
t=$(now)
K exec "$POD" -- cat /tmp/x >"$OUT"
tout=$(dt "$t")
cmp -s "$IN" "$OUT" || fail "file round trip: $(stat -c %s "$OUT") of 3000000 bytes back, or different"
ok "copy 3,000,000 bytes in (${tin}s) and out (${tout}s) through exec: identical"

# ------------------------------------------------------------- pod <-> pod (inside the namespace)
pod "$POD-web" "mkdir -p /w && echo pong > /w/index.html && exec httpd -f -p 8080 -h /w" | K apply -f - >/dev/null
K wait --for=condition=Ready "pod/$POD-web" --timeout=60s >/dev/null
WEB=$(K get pod "$POD-web" -o jsonpath='{.status.podIP}')
p2p=$(K exec "$POD" -- sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 $WEB 8080 | tail -1" || true)
[ "$p2p" = pong ] || fail "pod -> pod ($WEB:8080): '$p2p'"
ok "pod -> pod on the namespace's bridge ($WEB:8080): $p2p"

# ------------------------------------------------------------- the network rule
# The host's address on its default route, and that route's gateway: the
# targets a leak would reach first. Only routes are looked up; nothing is sent.
hostdev=$(ip -4 route show default | awk '{for (i=1;i<NF;i++) if ($i=="dev") {print $(i+1); exit}}')
hostaddr=$(ip -4 -o addr show dev "${hostdev:-lo}" scope global | awk '{sub(/\/.*/,"",$4); print $4; exit}')
gw=$(ip -4 route show default | awk '{print $3; exit}')
targets="$K8S_HOST_IP ${hostaddr:-} ${gw:-} 203.0.113.1"
[ -z "$(ip -n "$K8S_NETNS" -4 route show default)" ] || fail "the namespace has a default route"
[ -z "$(ip -n "$K8S_NETNS" -6 route show default 2>/dev/null)" ] || fail "the namespace has an IPv6 default route"
for a in ${hostaddr:-} ${gw:-} 203.0.113.1; do
	r=$(ip netns exec "$K8S_NETNS" ip -4 route get "$a" 2>&1 || true)
	case "$r" in *unreachable*) ;; *) fail "the namespace has a route to $a: $r" ;; esac
done
ok "namespace $K8S_NETNS: no default route; ip route get ${hostaddr:-} ${gw:-} 203.0.113.1 -> unreachable"
nat=$(ip netns exec "$K8S_NETNS" iptables -t nat -S | grep -E 'MASQUERADE|SNAT|DNAT' || true)
[ -z "$nat" ] || fail "NAT rules in the namespace: $nat"
fwd=$(ip netns exec "$K8S_NETNS" iptables -S FORWARD)
echo "$fwd" | grep -qx -- '-P FORWARD DROP' || fail "FORWARD policy in the namespace is not DROP: $fwd"
ip netns exec "$K8S_NETNS" iptables -S INPUT | grep -qF -- "-A INPUT ! -s $K8S_HOST_IP/32 -i $K8S_VETH_NODE -j DROP" ||
	fail "the namespace accepts more than $K8S_HOST_IP on $K8S_VETH_NODE"
ok "namespace: no NAT rules; FORWARD policy DROP, only $K8S_BRIDGE -> $K8S_BRIDGE accepted; on $K8S_VETH_NODE only $K8S_HOST_IP gets in"
proutes=$(K exec "$POD" -- ip -4 route)
echo "$proutes" | grep -q '^default' && fail "the pod has a default route: $proutes"
for a in $targets; do
	r=$(K exec "$POD" -- sh -c "ip -4 route get $a 2>&1; true")
	case "$r" in *unreachable*) ;; *) fail "the pod has a route to $a: $r" ;; esac
done
ok "pod: routes { $(echo "$proutes" | sed 's/ *$//' | paste -sd ';' | sed 's/;/; /g') }; ip route get $targets -> unreachable"
hostrules=$(iptables-save 2>/dev/null | grep -E "${K8S_NODE_IP%.*}\.|$K8S_VETH_HOST|${K8S_POD_CIDR%.*}\." || true)
[ -z "$hostrules" ] || fail "host iptables mention our addresses: $hostrules"
listen=$(ss -Htlnp 2>/dev/null) ours=
for f in "$PIDS"/*.pid; do
	p=$(cat "$f")
	ours+=$(echo "$listen" | grep "pid=$p," || true)
done
[ -z "$ours" ] || fail "cluster processes listen in the host's namespace: $ours"
ok "host: no iptables rule of ours, no listening socket of the cluster's processes (they listen inside $K8S_NETNS)"

# ------------------------------------------------------------- delete
K delete pod "$POD-web" --grace-period=0 --force --wait=false >/dev/null 2>&1
t=$(now)
K delete pod "$POD" --wait=true --timeout=60s >/dev/null
K get pod "$POD" >/dev/null 2>&1 && fail "pod still exists"
ok "pod delete -> gone: $(dt "$t")s"
echo "SMOKE OK"
