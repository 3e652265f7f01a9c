#!/usr/bin/env bash
# make property: the long randomized proof that every strategy resets a
# worker database to exactly its template, one engine cell at a time. Each
# cell is a `go test` of its own with its own timeout, so the whole matrix
# at N=2000 fits (the native cell runs three detection modes and takes the
# longest: about 30 minutes per mode at N=2000 on 2 cores, 90 in all, more
# at the default N). Output is streamed as
# the tests log it; a summary of each cell's result and time ends the run.
#
#   N                  workloads per strategy (default 2500; a quarter as
#                      many keep AUTO_INCREMENT)
#   C                  workloads per lease of the concurrent mode (150)
#   TESTDBD_ENGINES    the cells, comma-separated (default: native,
#                      mariadb-10.11, mariadb-11.8, mysql-9.7; add
#                      kubernetes with a cluster running, see make k8s-up)
#   PROPERTY_TIMEOUT   each cell's timeout (default 150m)
#   Every cell's fixture holds a table of 100,000 rows
#   (TESTDBD_PROPERTY_BIG=1; the full test matrix has it on the native
#   cell only).
#   PROPERTY_ARGS      more arguments for the test binary, e.g.
#                      "-property.seed=123" to replay a failure
set -uo pipefail

GO=${GO:-go}
N=${N:-2500}
C=${C:-150}
CELLS=${TESTDBD_ENGINES:-native,mariadb-10.11,mariadb-11.8,mysql-9.7}
TIMEOUT=${PROPERTY_TIMEOUT:-150m}

cd "$(dirname "$0")/.."
summary=()
failed=0
for cell in ${CELLS//,/ }; do
	echo "property: cell $cell, $N workloads per strategy, $C per lease concurrently, timeout $TIMEOUT"
	start=$SECONDS
	# shellcheck disable=SC2086 # PROPERTY_ARGS is split on purpose
	TESTDBD_ENGINES=$cell TESTDBD_PROPERTY_N=$N TESTDBD_PROPERTY_CONCURRENT=$C TESTDBD_PROPERTY_BIG=1 \
		"$GO" test -race -count=1 -timeout "$TIMEOUT" \
		-run 'TestPropertyResetEqualsTemplate|TestPropertyConcurrent' -v ./strategies/ \
		${PROPERTY_ARGS:+-args $PROPERTY_ARGS} 2>&1 | grep --line-buffered -v '^[[:space:]]*testenv.go'
	rc=${PIPESTATUS[0]}
	took=$(( (SECONDS - start + 30) / 60 ))
	if [ "$rc" -eq 0 ]; then
		summary+=("ok    $cell ($took min)")
	else
		summary+=("FAIL  $cell ($took min, exit $rc: see its output above)")
		failed=1
	fi
done
echo "property: N=$N, C=$C"
printf 'property: %s\n' "${summary[@]}"
exit $failed
