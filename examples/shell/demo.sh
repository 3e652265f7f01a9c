#!/usr/bin/env bash
# testdbd from a shell: the CLI for the template and a lease as shell
# variables, curl for the REST API, the mariadb client for SQL.
#
#   examples/shell/demo.sh        # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
#
# Needs testdbd on PATH (make build puts it in bin/), curl and mariadb.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export TESTDBD_ADDR=${TESTDBD_ADDR:-127.0.0.1:8080}
api=$TESTDBD_ADDR
[[ $api == *://* ]] || api=http://$api
auth=()
[[ -n ${TESTDBD_TOKEN:-} ]] && auth=(-H "Authorization: Bearer $TESTDBD_TOKEN")
if ! command -v testdbd >/dev/null && [[ -x $here/../../bin/testdbd ]]; then
  PATH=$here/../../bin:$PATH
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" "$DB_DATABASE" -N -B -e "$1"; }

# 1. Is the daemon there? /healthz needs no token.
curl -fsS "$api/healthz"

# 2. The template, built once from the migrations (uploaded, so the daemon
#    may run on another host) or found by the content hash.
testdbd template ensure --name app --migrations-dir "$here/../migrations" --upload

# 3. A lease as the variables frameworks read, released when the script ends.
eval "$(testdbd lease --template app --worker shell-demo --format env)"
trap 'testdbd release "$TESTDBD_LEASE_ID"' EXIT
echo "leased $TESTDBD_LEASE_ID: $DB_DATABASE on $DB_HOST:$DB_PORT as $DB_USERNAME"
[[ $DB_READ_HOST == "$DB_HOST" && $DB_WRITE_HOST == "$DB_HOST" ]] || fail "read and write hosts differ"

# 4. A "test" writes; a reset over REST brings the template back.
sql "INSERT INTO users (email, name) VALUES ('shell@example.com', 'Shell'); DELETE FROM comments;"
[[ $(sql "SELECT COUNT(*) FROM users") == 4 ]] || fail "the insert did not land"
report=$(curl -fsS "${auth[@]}" -X POST "$api/v1/leases/$TESTDBD_LEASE_ID:reset" -d '{}')
echo "reset report: $report"
[[ $(sql "SELECT COUNT(*) FROM users") == 3 ]] || fail "users not reset"
[[ $(sql "SELECT COUNT(*) FROM comments") == 1 ]] || fail "comments not reset"
# The AUTO_INCREMENT counter is rewound too: the next user gets id 4 again.
[[ $(sql "INSERT INTO users (email, name) VALUES ('again@example.com', 'Again'); SELECT LAST_INSERT_ID();") == 4 ]] ||
  fail "AUTO_INCREMENT not rewound"

# 5. The same with curl alone: acquire, reset with another strategy, release.
lease=$(curl -fsS "${auth[@]}" -X POST "$api/v1/leases" -d '{"template":"app","strategy":"STRATEGY_TRUNCATE","ttl_seconds":60}')
id=$(grep -o '"id": *"l-[^"]*"' <<<"$lease" | grep -o 'l-[^"]*')
echo "leased $id with curl"
curl -fsS "${auth[@]}" -X POST "$api/v1/leases/$id:reset" -d '{"strategy":"STRATEGY_SNAPSHOT"}' >/dev/null
curl -fsS "${auth[@]}" -X DELETE "$api/v1/leases/$id" >/dev/null

# 6. Errors are JSON with the gRPC code and a message that says what to do.
code=$(curl -sS "${auth[@]}" -o /dev/null -w '%{http_code}' -X POST "$api/v1/leases" -d '{"template":"no-such-template"}')
[[ $code == 404 ]] || fail "unknown template: HTTP $code, want 404"

# 7. What the daemon runs and how fast its resets are.
testdbd status
echo "shell example: ok"
