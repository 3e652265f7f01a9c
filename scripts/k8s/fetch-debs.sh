#!/usr/bin/env bash
# Unpacks Debian's etcd-server and containernetworking-plugins into
# .tools/k8s/root/ (apt-get download + dpkg-deb -x), once. They are not
# installed: the etcd-server package would start a system etcd service, and
# the cluster needs neither on the host's PATH.
set -euo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"

packages=(etcd-server containernetworking-plugins)
[ -x "$ETCD" ] && [ -x "$CNI_BIN/bridge" ] && exit 0

debs=$K8S_DIR/debs
mkdir -p "$debs" "$ROOT"
cd "$debs"
if ! apt-get download -q -o APT::Sandbox::User=root "${packages[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get download -q -o APT::Sandbox::User=root "${packages[@]}" >/dev/null
fi
for p in "${packages[@]}"; do
  deb=$(find . -maxdepth 1 -name "${p}_*.deb" -printf '%T@ %f\n' | sort -rn | sed -n 1p | cut -d' ' -f2)
  log "unpacking $deb"
  dpkg-deb -x "$deb" "$ROOT"
done
# The first line only, read whole: head would end the pipe early, and the
# SIGPIPE etcd then gets fails the script (pipefail) now and then.
version=$("$ETCD" --version)
printf '%s\n' "${version%%$'\n'*}" >&2
