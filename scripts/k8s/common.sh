# shellcheck shell=bash disable=SC2034 # settings used by the scripts that source this
# Shared settings of the local Kubernetes test cluster (make k8s-up). Sourced
# by the other scripts in this directory; see docs/kubernetes-local.md.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MODULE=$REPO/tools/k8s               # the tools module that pins Kubernetes
K8S_DIR=${K8S_DIR:-$REPO/.tools/k8s} # build cache and cluster state (git-ignored)
BIN=$K8S_DIR/bin                     # kube-apiserver ... kubectl, pause
ROOT=$K8S_DIR/root                   # Debian packages unpacked (etcd)
RUN=$K8S_DIR/run                     # one cluster's state; removed by k8s-down
PKI=$RUN/pki
LOGS=$RUN/logs
KUBECONFIG_FILE=$K8S_DIR/admin.kubeconfig
CTRD_SOCK=$RUN/containerd/containerd.sock
HOST_STATE=$K8S_DIR/host-state       # what the host looked like before k8s-up

# Everything listens on loopback, on ports unlikely to be taken.
ETCD_PORT=23790
ETCD_PEER_PORT=23800
ETCD_METRICS_PORT=23810
APISERVER_PORT=16443
KCM_PORT=20257
SCHEDULER_PORT=20259
KUBELET_PORT=20250
KUBELET_HEALTHZ_PORT=20248

# The node's name is also the host name the apiserver dials to reach the
# kubelet (a node's address cannot be loopback): it must resolve to 127.0.0.1.
NODE_NAME=localhost
CNI_NETWORK=testdbd-k8s
CNI_BRIDGE=testdbd-k8s0
POD_SUBNET=10.233.0.0/24
SERVICE_SUBNET=10.96.0.0/24
PAUSE_IMAGE=registry.k8s.io/pause:3.10

# The kubelet's cgroup root: its pods' cgroups (kubepods, QoS classes, pods,
# containers) live under this directory of every cgroup hierarchy, apart
# from any other kubelet's kubepods, and k8s-down removes only this tree.
CGROUP_ROOT=/testdbd-k8s

ETCD=$ROOT/usr/bin/etcd
CNI_BIN=$ROOT/usr/lib/cni

# The sysctls the kubelet sets at start (and the bridge plugin's
# ip_forward); k8s-down puts back what was there.
KUBELET_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)

# Host directories the kubelet, containerd and the CNI plugins create
# wherever their own are configured elsewhere; k8s-down removes those that
# did not exist before k8s-up.
HOST_DIRS=(/var/lib/kubelet /var/lib/cni /run/netns /var/log/containers /var/log/pods
  /run/containerd /etc/cni /opt/cni /run/runc /var/lib/containerd)

# cgroup_mounts: the mount point of every cgroup hierarchy (v1 controllers,
# named hierarchies, the v2 unified one).
cgroup_mounts() {
  awk '$0 ~ / - cgroup2? / { m = $5; gsub(/\\040/, " ", m); print m }' /proc/self/mountinfo
}

# cgroup_dirs: this cluster's cgroup directories in every hierarchy,
# deepest first.
cgroup_dirs() {
  local mp
  cgroup_mounts | while IFS= read -r mp; do
    if [ -d "$mp$CGROUP_ROOT" ]; then find "$mp$CGROUP_ROOT" -depth -type d; fi
  done
}

log() { printf 'k8s: %s\n' "$*" >&2; }
die() { printf 'k8s: %s\n' "$*" >&2; exit 1; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# since <now_ms at start>: the seconds since then, like 12.3s
since() {
  local ms=$(($(now_ms) - $1))
  printf '%d.%ds' $((ms / 1000)) $((ms % 1000 / 100))
}

kubectl() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }
ctr() { command ctr --address "$CTRD_SOCK" --namespace k8s.io "$@"; }

need_root() {
  [ "$(id -u)" -eq 0 ] || die "the local cluster needs root (mounts, cgroups, network namespaces)"
}

# install_packages <command-or-file>=<package> ...: apt-get installs the
# packages whose command or file is missing, like scripts/install-deps.sh.
install_packages() {
  local missing=() pair
  for pair in "$@"; do
    if ! command -v "${pair%%=*}" >/dev/null 2>&1 && [ ! -e "${pair%%=*}" ]; then
      missing+=("${pair#*=}")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# pid_alive <pidfile>: the process of the pid file runs, and is ours: every
# daemon of the cluster has a path under K8S_DIR on its command line (a pid
# file left by a crash must not name some other process that got its pid).
pid_alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$K8S_DIR/"
}
