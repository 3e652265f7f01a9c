#!/usr/bin/env bash
# Loads a local Docker image into the test cluster's containerd (there is no
# registry to pull from): docker save | ctr images import.
# Usage: scripts/k8s/load-image.sh IMAGE   (make k8s-load-image IMAGE=...)
# Pods use it with imagePullPolicy: Never (or IfNotPresent). Skipped when the
# cluster already holds the same Docker image id. Loaded images stay across
# k8s-down and k8s-up.
set -euo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"
need_root

image=${1:?usage: load-image.sh IMAGE}
pid_alive "$RUN/pids/containerd" || die "the cluster is not running: make k8s-up first"
command -v docker >/dev/null 2>&1 || die "loading an image needs Docker (docker save)"
id=$(docker image inspect -f '{{ .Id }}' "$image" 2>/dev/null) ||
  die "no Docker image $image (make image builds testdbd/mariadb:10.11-local)"

# The name containerd and the kubelet know it by: docker.io/library/x:latest
# for x, docker.io/org/x:tag for org/x:tag, as is with a registry host.
ref=$image
first=${ref%%/*}
if [ "$first" = "$ref" ]; then
  ref=docker.io/library/$ref
elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
  ref=docker.io/$ref
fi
last=${ref##*/}
[[ $last == *:* || $last == *@* ]] || ref=$ref:latest

label=io.testdbd.docker-id
if ctr images ls "name==$ref" 2>/dev/null | grep -qF "$label=$id"; then
  log "$ref is loaded already ($id)"
  exit 0
fi
t=$(now_ms)
docker save "$image" | ctr images import - >/dev/null
ctr images label "$ref" "$label=$id" >/dev/null
log "loaded $ref ($id) in $(since "$t")"
