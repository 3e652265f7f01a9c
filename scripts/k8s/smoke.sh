#!/usr/bin/env bash
# The local cluster's smoke test (make k8s-smoke): a MariaDB pod from a loaded
# image, its datadir on a memory-backed emptyDir with a size limit, must get
# Ready, answer `select 1` over TCP from the host on its pod IP, and be
# deleted again. Exits non-zero on any failure, deleting the pod anyway.
# Usage: scripts/k8s/smoke.sh [IMAGE]   (default testdbd/mariadb:10.11-local,
# which must be loaded: make k8s-load-image)
set -euo pipefail
# shellcheck source=scripts/k8s/common.sh
. "$(dirname "$0")/common.sh"
need_root

image=${1:-testdbd/mariadb:10.11-local}
pod=testdbd-smoke
size_mi=256
[ -f "$KUBECONFIG_FILE" ] || die "the cluster is not running: make k8s-up first"
command -v mariadb >/dev/null 2>&1 || "$REPO/scripts/install-deps.sh" server
password=$(openssl rand -hex 12)

cleanup() { kubectl delete pod "$pod" --ignore-not-found --grace-period=2 --wait=true --timeout=60s >/dev/null 2>&1 || true; }
fail() {
  log "FAIL: $*"
  kubectl describe pod "$pod" 2>/dev/null | tail -n 25 >&2 || true
  kubectl logs "$pod" 2>/dev/null | tail -n 20 >&2 || true
  cleanup
  exit 1
}
cleanup

t0=$(now_ms)
# The datadir comes from the image's pristine seed when it has one (what the
# Docker provider does), else from mariadb-install-db; the init file adds an
# account that may log in over TCP.
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  labels: {app: testdbd-smoke}
spec:
  terminationGracePeriodSeconds: 5
  automountServiceAccountToken: false
  enableServiceLinks: false
  dnsPolicy: Default
  containers:
  - name: mariadbd
    image: $image
    imagePullPolicy: Never
    env: [{name: SMOKE_PASSWORD, value: "$password"}]
    command: ["/bin/sh", "-c"]
    args:
    - |
      set -e
      if [ -d /testdbd/seed ]; then
        cp -a /testdbd/seed/. /var/lib/mysql/
      else
        mariadb-install-db --no-defaults --user=root --datadir=/var/lib/mysql --skip-test-db >/tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
      fi
      # one statement a line: the server reads its init file line by line
      printf '%s\n' "CREATE USER 'smoke'@'%' IDENTIFIED BY '\$SMOKE_PASSWORD';" \\
        "GRANT ALL ON *.* TO 'smoke'@'%';" >/tmp/init.sql
      exec mariadbd --no-defaults --user=root --datadir=/var/lib/mysql --bind-address=0.0.0.0 --port=3306 \\
        --skip-name-resolve --innodb-log-file-size=8388608 --init-file=/tmp/init.sql
    ports: [{containerPort: 3306}]
    readinessProbe:
      tcpSocket: {port: 3306}
      periodSeconds: 1
    resources: {limits: {memory: 512Mi}}
    volumeMounts: [{name: data, mountPath: /var/lib/mysql}]
  volumes:
  - name: data
    emptyDir: {medium: Memory, sizeLimit: ${size_mi}Mi}
EOF
log "created pod $pod from $image"

kubectl wait --for=condition=Ready "pod/$pod" --timeout=120s >/dev/null || fail "pod not Ready in 120 s"
ip=$(kubectl get pod "$pod" -o 'jsonpath={.status.podIP}')
log "pod Ready after $(since "$t0") on $ip"

# The pod's address must be on the cluster's bridge: never send anything
# off the host.
ip route get "$ip" | grep -q "dev $CNI_BRIDGE " || fail "$ip is not routed through $CNI_BRIDGE: $(ip route get "$ip")"

# Its datadir is a tmpfs of the emptyDir's size (kubectl exec goes through
# the apiserver, the kubelet and containerd's stream server).
mnt=$(kubectl exec "$pod" -- sed -n 's|^[^ ]* /var/lib/mysql \([^ ]*\) \([^ ]*\).*|\1 \2|p' /proc/mounts) ||
  fail "kubectl exec failed"
case "$mnt" in
  "tmpfs "*size=$((size_mi * 1024))k*) log "datadir: $mnt" ;;
  *) fail "the datadir is not a ${size_mi}Mi tmpfs: '$mnt'" ;;
esac

answer=""
for ((i = 0; i < 20; i++)); do
  if answer=$(mariadb --no-defaults -h "$ip" -P 3306 -u smoke -p"$password" --connect-timeout=2 -N -B \
    -e 'select 1' 2>&1); then
    break
  fi
  sleep 0.5
done
[ "$answer" = 1 ] || fail "select 1 on $ip:3306 answered: $answer"
log "select 1 on $ip:3306 from the host: $answer ($(mariadb --no-defaults -h "$ip" -u smoke -p"$password" -N -B -e 'select version()'))"

t1=$(now_ms)
kubectl delete pod "$pod" --grace-period=5 --wait=true --timeout=60s >/dev/null || fail "pod not deleted"
log "pod deleted in $(since "$t1")"
log "smoke test passed in $(since "$t0")"
