#!/usr/bin/env bash
# Builds what the local test cluster runs, once, into .tools/k8s/ (git-ignored):
#   bin/kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#   kubectl   from the Go module proxy, at the version tools/k8s/go.mod pins
#   bin/pause, images/pause.tar   the pod sandbox image (no registry to pull it)
#   root/usr/bin/etcd             Debian's etcd-server, unpacked, not installed
# Rebuilds only when tools/k8s changes (about 10 minutes on 2 cores the
# first time; the Go build cache makes a rebuild quicker). What it built is
# also kept in the user's cache (K8S_CACHE, by default
# ~/.cache/testdbd/k8s/, one build: the newest), so that another checkout
# (CI's clean clone) copies it in seconds instead of linking it again.
set -euo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"

key=$(cat "$MODULE/go.mod" "$MODULE/go.sum" "$MODULE/pause/main.go" | sha256sum | cut -c1-16)
stamp=$K8S_DIR/build.key
cache=${K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/testdbd/k8s}
built=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl pause)

# keep: copies this checkout's build into the user's cache, in place of
# any other build there. (set -e does not apply in a function called with
# ||: every step checks its own failure, so that a partial copy is never
# marked done.)
keep() {
  local b tmp=$cache/$key.tmp
  [ -f "$cache/$key/done" ] && return 0
  rm -rf "$tmp" && mkdir -p "$tmp" || return 1
  for b in "${built[@]}"; do cp "$BIN/$b" "$tmp/" || { rm -rf "$tmp"; return 1; }; done
  cp "$K8S_DIR/images/pause.tar" "$tmp/" || { rm -rf "$tmp"; return 1; }
  touch "$tmp/done" || return 1
  find "$cache" -mindepth 1 -maxdepth 1 ! -name "$key.tmp" -exec rm -rf {} + && mv "$tmp" "$cache/$key"
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
  keep || log "could not keep the build in $cache (it is rebuilt in another checkout)"
  exit 0
fi
if [ -f "$cache/$key/done" ]; then
  mkdir -p "$BIN" "$K8S_DIR/images"
  for b in "${built[@]}"; do cp "$cache/$key/$b" "$BIN/$b"; done
  cp "$cache/$key/pause.tar" "$K8S_DIR/images/pause.tar"
  echo "$key" >"$stamp"
  log "copied the build from $cache/$key"
  exit 0
fi

mkdir -p "$BIN" "$K8S_DIR/images"
rm -f "$stamp"
start=$(date +%s)

# Kubernetes: k8s.io/kubernetes's own go.mod asks for v0.0.0 of its staging
# modules and replaces them with ./staging, which does not apply to a
# dependent: tools/k8s/go.mod replaces each with its release instead.
version=$(cd "$MODULE" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
major=${version#v}; major=${major%%.*}
minor=${version#v"$major".}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  t=$(date +%s)
  log "building $cmd $version"
  (cd "$MODULE" && go build -trimpath -ldflags "$ldflags" -o "$BIN/$cmd.new" "k8s.io/kubernetes/cmd/$cmd")
  mv "$BIN/$cmd.new" "$BIN/$cmd"
  log "built $cmd in $(( $(date +%s) - t ))s"
done

# The pause image: a static binary in a one-layer image, written in the
# format of `docker save`, which `ctr images import` reads.
(cd "$MODULE" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/pause" ./pause)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/rootfs"
cp "$BIN/pause" "$work/rootfs/pause"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/rootfs" -cf "$work/layer.tar" pause
diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
cat >"$work/config.json" <<JSON
{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:$diff_id"]}}
JSON
config_id=$(sha256sum "$work/config.json" | cut -d' ' -f1)
mv "$work/config.json" "$work/$config_id.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]\n' "$config_id" "$PAUSE_IMAGE" >"$work/manifest.json"
tar --sort=name --mtime=@0 --owner=0 --group=0 -C "$work" -cf "$K8S_DIR/images/pause.tar" manifest.json "$config_id.json" layer.tar

echo "$key" >"$stamp"
log "build done in $(( $(date +%s) - start ))s: $BIN"
keep || log "could not keep the build in $cache (it is rebuilt in another checkout)"
