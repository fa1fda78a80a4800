#!/bin/sh
# Builds the helper for linux/$1, reproducibly: no cgo, no paths, no build id.
set -eu
CGO_ENABLED=0 GOOS=linux GOARCH="$1" go build -trimpath -buildvcs=false \
	-ldflags='-s -w -buildid=' -o "sandbox-helper-linux-$1" ../helper/cmd/sandbox-helper
