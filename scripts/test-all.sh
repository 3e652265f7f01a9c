#!/usr/bin/env bash
# The tests of make test-all, once its prerequisites are built: the root
# module's over the whole engine matrix, with the local Kubernetes cluster
# up (scripts/k8s/with-cluster.sh), and beside them those of the Go SDK
# (client/) and of the benchmark (bench/), modules of their own that ./...
# does not include. The root module's output streams as it comes; each
# other module's is printed whole when the root module's tests end. Fails
# when any module's tests failed.
#
# The root module's packages are listed longest first, so that the two
# test processes go test runs at once (-p, the number of cores) never
# leave the longest package to start last: go test starts a package's
# tests in the order it was given the packages.
#
#   GO       the go command (default go)
#   K8S      0 leaves the Kubernetes cluster out (its tests then skip)
set -uo pipefail

GO=${GO:-go}
cd "$(dirname "$0")/.."
out=$(mktemp -d)
# The other modules' tests end with this script, however it ends.
stop() {
	local p
	for p in $(jobs -p); do
		pkill -TERM -P "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	wait
	rm -rf "$out"
}
trap stop EXIT

# The longest packages of the root module, longest first; the others follow
# in go list's order.
first=(./strategies ./lease ./cmd/testdbd ./instance/docker ./instance/kubernetes ./binlog)

module() { # module NAME DIR: runs DIR's tests into $out/NAME.{log,rc}
	(cd "$2" && "$GO" test -race -count=1 -timeout 30m ./... >"$out/$1.log" 2>&1; echo $? >"$out/$1.rc") &
}
module client client
module bench bench

pkgs=$("$GO" list ./...) && mod=$("$GO" list -m) || exit 1
mapfile -t rest < <(sed "s|^$mod|.|" <<<"$pkgs" | grep -vxF -f <(printf '%s\n' "${first[@]}"))
K8S=${K8S:-1} TESTDBD_REQUIRE_NATIVE=1 scripts/k8s/with-cluster.sh \
	"$GO" test -race -count=1 -timeout 80m "${first[@]}" "${rest[@]}"
rc=$?
wait
for m in client bench; do
	echo "--- the $m module's tests ($m/)"
	cat "$out/$m.log"
	r=$(cat "$out/$m.rc" 2>/dev/null || echo 1)
	[ "$r" = 0 ] || rc=1
done
exit $rc
