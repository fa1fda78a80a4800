#!/usr/bin/env bash
# Imports images into the cluster's private containerd (namespace k8s.io),
# where pods with imagePullPolicy Never/IfNotPresent find them: the helper
# image, built from this checkout's embedded helper binaries
# (k8s/cmd/helperimage), and the Docker images named as arguments (default:
# the test images, which up.sh imports already; built by
# `go run ./internal/testenv/cmd/testimages`). Prints the helper image's
# reference. Run as root, with the cluster up (scripts/k8s/up.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/k8s/lib.sh
[ -S "$SOCK" ] || { echo "load-images: no containerd socket at $SOCK (is the cluster up?)" >&2; exit 1; }
ref=$(cd k8s && go run ./cmd/helperimage -tag 2>&1 >/dev/null)
(cd k8s && go run ./cmd/helperimage -o -) | ctr -a "$SOCK" -n k8s.io images import --all-platforms - >&2
if [ $# -gt 0 ]; then
	docker save "$@" | ctr -a "$SOCK" -n k8s.io images import - >&2
fi
echo "$ref"
