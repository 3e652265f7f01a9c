#!/usr/bin/env bash
# Runs a command with the local Kubernetes cluster up and the server image
# loaded into it (make test runs the tests this way, so that the Kubernetes
# provider's tests have a cluster), then stops the cluster again, also when
# the command fails or is interrupted. A cluster that was already running
# is left running.
# Usage: scripts/k8s/with-cluster.sh COMMAND...   (IMAGE=... to load another
# image than testdbd/mariadb:10.11-local; K8S=0 runs the command alone)
# Without root or without Docker (no way to load the image) the command
# runs alone, and the Kubernetes tests skip, saying why.
set -uo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"
dir=$(dirname "$0")
image=${IMAGE:-testdbd/mariadb:10.11-local}

# alone <why> COMMAND...: runs the command without a cluster.
alone() {
  log "$1: running without a cluster; the Kubernetes provider's tests will skip"
  shift
  exec "$@"
}
[ "${K8S:-1}" = 0 ] && { log "K8S=0: running without a cluster"; exec "$@"; }
[ "$(id -u)" -eq 0 ] || alone "not root (the local cluster needs root)" "$@"
if ! command -v docker >/dev/null 2>&1 || ! docker image inspect "$image" >/dev/null 2>&1; then
  alone "no Docker image $image to load into the cluster (make image builds it where Docker runs)" "$@"
fi

was_up=0
if [ -f "$KUBECONFIG_FILE" ] && pid_alive "$RUN/pids/kubelet" && pid_alive "$RUN/pids/apiserver"; then
  was_up=1
fi
if [ $was_up = 0 ]; then
  trap '"$dir/down.sh"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
fi
"$dir/up.sh" || exit 1
"$dir/load-image.sh" "$image" || exit 1
"$@"
