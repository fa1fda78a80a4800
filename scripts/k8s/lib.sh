# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are for the scripts that source this file
# Sourced by scripts/k8s/{build,up,down,smoke}.sh: one place for the names,
# paths and addresses of the single-node cluster. Every knob is an env var.
#
# Layout:
#   $K8S_CACHE  (kept by down.sh; keyed by version, outside the clone)
#       bin/      kube-apiserver kubelet kubectl kube-scheduler kube-controller-manager + .stamp
#       build/    the wrapper Go module the binaries are built from
#       etcd/     Debian's etcd-server .deb, unpacked (no service)
#       pause/    the pause image as an OCI archive
#   $K8S_DIR    (removed by down.sh) PKI, kubeconfigs, logs, pids, etcd data,
#               the private containerd's root/state/socket, kubelet root, CNI.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export HOME="${HOME:-/root}"
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"

K8S_VERSION=${K8S_VERSION:-v1.37.2}
K8S_CACHE=${K8S_CACHE:-/var/cache/dockersandbox/k8s/$K8S_VERSION}
K8S_DIR=${K8S_DIR:-/var/lib/dockersandbox-k8s}
BIN=$K8S_CACHE/bin

# The node's network namespace and the veth pair that joins it to the host.
# Addresses: a /30 of 10.x that nothing on this machine uses (up.sh checks).
K8S_NETNS=${K8S_NETNS:-dsbx-k8s}
K8S_VETH_HOST=${K8S_VETH_HOST:-dsbxk8s0}   # host side
K8S_VETH_NODE=${K8S_VETH_NODE:-eth0}       # inside the namespace
K8S_HOST_IP=${K8S_HOST_IP:-10.213.0.1}
K8S_NODE_IP=${K8S_NODE_IP:-10.213.0.2}
K8S_VETH_PREFIX=30
K8S_POD_CIDR=${K8S_POD_CIDR:-10.213.64.0/24}
K8S_SERVICE_CIDR=${K8S_SERVICE_CIDR:-10.213.128.0/24}
K8S_SERVICE_IP=${K8S_SERVICE_IP:-10.213.128.1} # first address of the service range
K8S_API_PORT=${K8S_API_PORT:-6443}
K8S_NODE_NAME=${K8S_NODE_NAME:-dsbx-k8s-node}
K8S_BRIDGE=cni0 # lives inside the namespace
K8S_CGROUP_ROOT=/dockersandbox-k8s
PAUSE_IMAGE=localhost/dockersandbox-k8s/pause:1

PKI=$K8S_DIR/pki
LOGS=$K8S_DIR/logs
PIDS=$K8S_DIR/pids
CTRD=$K8S_DIR/containerd
SOCK=$CTRD/containerd.sock
KUBECONFIG_ADMIN=$K8S_DIR/kubeconfig
CNI_BIN=/usr/lib/cni

# Components run inside the namespace; the process names we start, in order.
K8S_COMPONENTS="kube-apiserver kubelet kubectl kube-scheduler kube-controller-manager"

nsexec() { ip netns exec "$K8S_NETNS" "$@"; }
kctl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
now() { date +%s.%N; }
secs_since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
