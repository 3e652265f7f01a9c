#!/usr/bin/env bash
# Stops the local Kubernetes test cluster (make k8s-down) and undoes what it
# changed on the host: its pods and their network namespaces, every process
# it started, its mounts, the pod bridge, the kubelet's cgroups, the sysctls
# the kubelet set (put back to the values k8s-up recorded), the host
# directories that did not exist before, and any KUBE-* iptables chain.
# Keeps the build cache and the loaded images (.tools/k8s/containerd).
# Safe to run at any time, also with nothing running.
set -uo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"
need_root
t0=$(now_ms)

# stop <name>...: SIGTERM to the daemons of run/pids/<name>, together (each
# takes a second or two to shut down), SIGKILL to those still running after
# 10 s (the apiserver, when etcd died under it).
stop() {
  local name pid i left
  declare -A pids=()
  for name in "$@"; do
    if pid_alive "$RUN/pids/$name"; then
      pid=$(cat "$RUN/pids/$name")
      kill -TERM "$pid" 2>/dev/null && pids[$name]=$pid
    fi
    rm -f "$RUN/pids/$name"
  done
  for ((i = 0; i < 100; i++)); do
    left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ $left = 0 ] && return 0
    sleep 0.1
  done
  for name in "${!pids[@]}"; do
    if kill -0 "${pids[$name]}" 2>/dev/null; then
      log "$name (${pids[$name]}) did not stop: killing it"
      kill -KILL "${pids[$name]}" 2>/dev/null
    fi
  done
  sleep 0.2
}

# 1. Pods, while the kubelet runs: it stops their containers, unmounts their
# volumes and tears down their network (CNI DEL, network namespace). The
# controller manager and the scheduler stop first, so that no controller
# replaces a deleted pod.
stop controller-manager scheduler
if pid_alive "$RUN/pids/kubelet" && pid_alive "$RUN/pids/apiserver" && pid_alive "$RUN/pids/etcd" &&
  [ -f "$KUBECONFIG_FILE" ]; then
  if [ -n "$(kubectl get pods --all-namespaces -o name --request-timeout=10s 2>/dev/null)" ]; then
    t=$(now_ms)
    if kubectl delete pods --all --all-namespaces --grace-period=5 --timeout=60s >/dev/null 2>&1; then
      log "pods deleted in $(since "$t")"
    else
      log "pods not deleted in time: removing their containers directly"
    fi
  fi
fi
stop kubelet

# 2. Whatever containers are left (sandboxes included), through containerd.
if pid_alive "$RUN/pids/containerd"; then
  tasks=$(ctr tasks ls -q 2>/dev/null)
  if [ -n "$tasks" ]; then
    for id in $tasks; do ctr tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
    sleep 0.5
    for id in $tasks; do ctr tasks delete --force "$id" >/dev/null 2>&1; done
  fi
  for id in $(ctr containers ls -q 2>/dev/null); do
    ctr containers delete "$id" >/dev/null 2>&1
  done
fi
stop containerd apiserver etcd
# Shims of this containerd (found by its socket, which no other one uses),
# then any process still in the pods' cgroups.
for pid in $(pgrep -f -- "containerd-shim.* -address $CTRD_SOCK( |$)" 2>/dev/null); do
  kill -KILL "$pid" 2>/dev/null
done
cgroup_dirs | sed 's|$|/cgroup.procs|' | xargs -r cat 2>/dev/null | sort -u |
  while read -r pid; do kill -KILL "$pid" 2>/dev/null; done
log "processes stopped after $(since "$t0")"

# 3. Mounts: containers' root filesystems and sandboxes' /dev/shm (under
# run/), pods' volumes (run/kubelet/root), the pods' network namespaces.
new_netns=()
for ns in /run/netns/*; do
  [ -e "$ns" ] || continue
  grep -qxF "${ns##*/}" "$HOST_STATE/netns" 2>/dev/null || new_netns+=("$ns")
done
# mount points under a prefix, deepest first (mountinfo escapes spaces as \040).
mounts_under() {
  awk -v p="$1" '{ m = $5; gsub(/\\040/, " ", m); if (m == p || index(m, p "/") == 1) print m }' /proc/self/mountinfo |
    awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-
}
for prefix in "$K8S_DIR" /var/lib/kubelet "${new_netns[@]}"; do
  mounts_under "$prefix" | while IFS= read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
  done
done
rm -f "${new_netns[@]}"

# 4. The pod network: veths still on the bridge, then the bridge.
if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
  for veth in $(ip -o link show master "$CNI_BRIDGE" | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
    ip link delete "$veth" 2>/dev/null
  done
  ip link delete "$CNI_BRIDGE"
fi

# 5. The kubelet's cgroups (its root, kubepods, QoS classes, pods,
# containers), deepest first, in every hierarchy; nothing outside its root.
for ((try = 0; try < 10; try++)); do
  dirs=$(cgroup_dirs)
  [ -z "$dirs" ] && break
  while IFS= read -r d; do rmdir "$d" 2>/dev/null; done <<<"$dirs"
  sleep 0.3
done
[ -n "$(cgroup_dirs)" ] && log "cgroups left: $(cgroup_dirs | head -n3 | tr '\n' ' ')"

# 6. iptables: the kubelet is configured to add no chain, but a kubelet run
# differently leaves KUBE-* chains and the rules that jump to them.
for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null 2>&1 || continue
  for table in filter nat mangle; do
    "$ipt-save" -t "$table" 2>/dev/null | grep -E '^-A .*-j KUBE-' | grep -vE '^-A KUBE-' |
      while IFS= read -r rule; do eval "$ipt -t $table -D ${rule#-A }" 2>/dev/null; done
    for chain in $("$ipt-save" -t "$table" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do
      "$ipt" -t "$table" -F "$chain" 2>/dev/null
    done
    for chain in $("$ipt-save" -t "$table" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do
      "$ipt" -t "$table" -X "$chain" 2>/dev/null
    done
  done
done
# ...and the iptables-nft tables (filter, nat, mangle) created on the way
# that hold no rule: absent before k8s-up, absent after k8s-down.
if [ -f "$HOST_STATE/nft-tables" ] && command -v nft >/dev/null 2>&1; then
  nft list tables 2>/dev/null | grep -E '^table ip6? (filter|nat|mangle)$' | while IFS= read -r t; do
    grep -qxF "$t" "$HOST_STATE/nft-tables" && continue
    # shellcheck disable=SC2086 # "table <family> <name>"
    nft -j list $t 2>/dev/null | grep -q '"rule"' || nft delete $t
  done
fi

# 7. Sysctls and host directories, as k8s-up found them.
if [ -f "$HOST_STATE/sysctl" ]; then
  while IFS='=' read -r name value; do
    [ "$(sysctl -n "$name")" = "$value" ] || sysctl -q -w "$name=$value"
  done <"$HOST_STATE/sysctl"
fi
if [ -f "$HOST_STATE/dirs" ]; then
  for d in "${HOST_DIRS[@]}"; do
    [ -e "$d" ] || continue
    grep -qxF "$d" "$HOST_STATE/dirs" && continue
    if [ -n "$(mounts_under "$d")" ]; then
      log "not removing $d: something is mounted under it"
      continue
    fi
    rm -rf "$d"
  done
fi

rm -rf "$RUN" "$KUBECONFIG_FILE" "$HOST_STATE"
log "down in $(since "$t0")"
