#!/usr/bin/env bash
# Starts the local single-node Kubernetes cluster for tests (make k8s-up):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a containerd
# of its own (Docker's is never touched) and a kubelet, all on loopback, and
# writes .tools/k8s/admin.kubeconfig. Builds the binaries first (once).
# Idempotent: with the cluster up and healthy it only says so. A cluster
# left half-started is stopped and cleaned first (scripts/k8s/down.sh).
set -euo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"
need_root

install_packages containerd=containerd ctr=containerd containerd-shim-runc-v2=containerd \
  runc=runc openssl=openssl ip=iproute2 iptables=iptables pgrep=procps
"$(dirname "$0")/build.sh"
"$(dirname "$0")/fetch-debs.sh"

healthy() {
  local p
  for p in etcd apiserver controller-manager scheduler containerd kubelet; do
    pid_alive "$RUN/pids/$p" || return 1
  done
  [ "$(kubectl get --raw=/readyz --request-timeout=5s 2>/dev/null)" = ok ] || return 1
  [ "$(kubectl get node "$NODE_NAME" --request-timeout=5s \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
if [ -f "$KUBECONFIG_FILE" ] && healthy; then
  log "already running: KUBECONFIG=$KUBECONFIG_FILE"
  exit 0
fi
if [ -e "$RUN" ] || [ -e "$HOST_STATE" ]; then
  log "a previous cluster was left behind: cleaning it first"
  "$(dirname "$0")/down.sh"
fi

# The ports and the cgroup root are this cluster's alone: another copy of
# it (from another checkout) that still runs is named, never touched.
# Another kubelet's pods (kubepods at the top of the hierarchies) are no
# concern: this cluster's live under $CGROUP_ROOT.
for port in $ETCD_PORT $ETCD_PEER_PORT $ETCD_METRICS_PORT $APISERVER_PORT $KCM_PORT \
  $SCHEDULER_PORT $KUBELET_PORT $KUBELET_HEALTHZ_PORT; do
  holder=$(ss -Hltnp "sport = :$port" 2>/dev/null | head -n1)
  [ -z "$holder" ] || die "port $port, which this cluster needs, is taken ($holder): another cluster of this kind may run here; stop it with make k8s-down in its checkout"
done
dirs=$(cgroup_dirs)
if [ -n "$dirs" ]; then
  # shellcheck disable=SC2086 # one directory per line, no spaces
  procs=$(cat $(sed 's|$|/cgroup.procs|' <<<"$dirs") 2>/dev/null | head -n3 | tr '\n' ' ')
  [ -z "$procs" ] || die "processes ($procs) run in the cgroups of a cluster of this kind ($CGROUP_ROOT): stop it with make k8s-down in its checkout"
  while IFS= read -r d; do rmdir "$d" 2>/dev/null; done <<<"$dirs"
  [ -z "$(cgroup_dirs)" ] || die "cannot remove the empty cgroups a stopped cluster left under $CGROUP_ROOT"
  log "removed the empty cgroups a stopped cluster left under $CGROUP_ROOT"
fi

t0=$(now_ms)

# What the host looks like before anything starts, for k8s-down to put back.
record_host_state() {
  local s d
  mkdir -p "$HOST_STATE"
  for s in "${KUBELET_SYSCTLS[@]}"; do
    printf '%s=%s\n' "$s" "$(sysctl -n "$s")"
  done >"$HOST_STATE/sysctl"
  for d in "${HOST_DIRS[@]}"; do
    [ -e "$d" ] && echo "$d"
  done >"$HOST_STATE/dirs"
  ls /run/netns 2>/dev/null >"$HOST_STATE/netns" || true
  if command -v nft >/dev/null 2>&1; then nft list tables >"$HOST_STATE/nft-tables" 2>/dev/null || true; fi
}
record_host_state

mkdir -p "$RUN/pids" "$LOGS" "$PKI" "$RUN/etcd" "$RUN/kubelet" "$RUN/cni/net.d" "$RUN/containerd"

# start <name> <command...>: runs a daemon in its own session, detached from
# make, logging to run/logs/<name>.log, its pid in run/pids/<name>.
start() {
  local name=$1; shift
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/pids/$name"
}

# wait_for <what> <seconds> <command...>: polls the command until it succeeds.
wait_for() {
  local what=$1 limit=$2 i; shift 2
  for ((i = 0; i < limit * 5; i++)); do
    if "$@" >/dev/null 2>&1; then
      log "$what after $(since "$t0")"
      return 0
    fi
    sleep 0.2
  done
  log "timed out waiting for $what; the logs are in $LOGS"
  tail -n 20 "$LOGS"/*.log >&2 || true
  exit 1
}

# --- PKI: a CA, the apiserver's serving certificate, client certificates
# for the admin (system:masters) and the node, and the service-account keys.
openssl_quiet() {
  local out
  out=$(openssl "$@" 2>&1) || { printf '%s\n' "$out" >&2; die "openssl $1 failed"; }
}
openssl_quiet req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj /CN=testdbd-k8s-ca -keyout "$PKI/ca.key" -out "$PKI/ca.crt"
# cert <name> <subject> <extensions>
cert() {
  printf '%s\n' "$3" >"$PKI/$1.ext"
  openssl_quiet req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" \
    -keyout "$PKI/$1.key" -out "$PKI/$1.csr"
  openssl_quiet x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt"
}
cert apiserver /CN=kube-apiserver "keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:${SERVICE_SUBNET%.*}.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin /CN=admin/O=system:masters "keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
cert node "/CN=system:node:$NODE_NAME/O=system:nodes" "keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
openssl_quiet genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key"
openssl_quiet pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
chmod 600 "$PKI"/*.key

# kubeconfig <file> <cert name>
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testdbd-k8s
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$2.crt")
    client-key-data: $(base64 -w0 "$PKI/$2.key")
contexts:
- name: testdbd-k8s
  context: {cluster: testdbd-k8s, user: $2, namespace: default}
current-context: testdbd-k8s
EOF
  chmod 600 "$1"
}
kubeconfig "$KUBECONFIG_FILE" admin
kubeconfig "$RUN/kubelet.kubeconfig" node

# --- etcd, its data on a tmpfs of its own: bookworm's etcd 3.4 has no
# --unsafe-no-fsync, and an fsync per write on disk slows every API call.
# k8s-down unmounts it, throwing the data away.
mount -t tmpfs -o size=512m,mode=0700 testdbd-k8s-etcd "$RUN/etcd"
start etcd "$ETCD" --name testdbd-k8s --data-dir "$RUN/etcd/data" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "testdbd-k8s=http://127.0.0.1:$ETCD_PEER_PORT" \
  --listen-metrics-urls "http://127.0.0.1:$ETCD_METRICS_PORT"

# --- kube-apiserver. It cannot advertise a loopback address, and with no
# endpoint reconciler it never publishes the one it is given (a
# documentation address); the kubelet is reached by its host name (see
# NODE_NAME) since a node's address cannot be loopback either.
start apiserver "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --advertise-address=198.51.100.1 --endpoint-reconciler-type=none \
  --service-cluster-ip-range="$SERVICE_SUBNET" \
  --authorization-mode=Node,RBAC --client-ca-file="$PKI/ca.crt" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --kubelet-client-certificate="$PKI/admin.crt" --kubelet-client-key="$PKI/admin.key" \
  --kubelet-preferred-address-types=Hostname \
  --allow-privileged=true --profiling=false

# --- containerd: a second one, with the CRI plugin, its own root (kept
# across k8s-down, so loaded images stay), state, socket and runc root.
# restrict_oom_score_adj: without it runc fails to start any sandbox where
# the process lacks CAP_SYS_RESOURCE ("can't get final child's PID from pipe").
cat >"$RUN/containerd/config.toml" <<EOF
version = 2
root = "$K8S_DIR/containerd"
state = "$RUN/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt"]

[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$RUN/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
EOF
# The pod network: a bridge on the host, host-local addresses. Pods get no
# default route and no masquerading: they reach the host and each other only.
cat >"$RUN/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [{
    "type": "bridge",
    "bridge": "$CNI_BRIDGE",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "$POD_SUBNET"}]],
      "dataDir": "$RUN/cni/networks"
    }
  }]
}
EOF
start containerd containerd --config "$RUN/containerd/config.toml"

apiserver_ready() { [ "$(kubectl get --raw=/readyz --request-timeout=5s 2>/dev/null)" = ok ]; }
wait_for "apiserver ready" 120 apiserver_ready

wait_for "containerd ready" 60 ctr version
if ! ctr images ls -q | grep -qx "$PAUSE_IMAGE"; then
  ctr images import "$K8S_DIR/images/pause.tar" >/dev/null
fi

start controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$KUBECONFIG_FILE" --authentication-kubeconfig="$KUBECONFIG_FILE" \
  --authorization-kubeconfig="$KUBECONFIG_FILE" \
  --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --use-service-account-credentials=false --service-cluster-ip-range="$SERVICE_SUBNET" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key"
start scheduler "$BIN/kube-scheduler" \
  --kubeconfig="$KUBECONFIG_FILE" --authentication-kubeconfig="$KUBECONFIG_FILE" \
  --authorization-kubeconfig="$KUBECONFIG_FILE" \
  --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --leader-elect=false

# --- kubelet. makeIPTablesUtilChains: false keeps it out of iptables (no
# kube-proxy runs to need its chains). It still sets six kernel sysctls
# (KUBELET_SYSCTLS), which k8s-down puts back.
cat >"$RUN/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://$CTRD_SOCK
imageServiceEndpoint: unix://$CTRD_SOCK
podLogsDir: $RUN/pod-logs
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
maxPods: 50
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
registerNode: true
EOF
# The cgroup root must exist in every hierarchy before the kubelet starts
# (a new cpuset cgroup has no CPUs or memory nodes until given its parent's).
cgroup_mounts | while IFS= read -r mp; do
  mkdir -p "$mp$CGROUP_ROOT"
  if [ -f "$mp/cpuset.cpus" ]; then
    cat "$mp/cpuset.cpus" >"$mp$CGROUP_ROOT/cpuset.cpus"
    cat "$mp/cpuset.mems" >"$mp$CGROUP_ROOT/cpuset.mems"
  fi
done
start kubelet "$BIN/kubelet" --config="$RUN/kubelet/config.yaml" --kubeconfig="$RUN/kubelet.kubeconfig" \
  --root-dir="$RUN/kubelet/root" --cert-dir="$RUN/kubelet/pki" --hostname-override="$NODE_NAME"

# A pod is refused until its namespace's default ServiceAccount exists.
wait_for "default service account" 120 kubectl get serviceaccount default
wait_for "node $NODE_NAME Ready" 120 healthy
log "up in $(since "$t0"): export KUBECONFIG=$KUBECONFIG_FILE"
