#!/usr/bin/env bash
# The Django guide (docs/django.md), end to end:
#
#   examples/django/run.sh      # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
#
# 1. build the template from Django's own migrations (migrate a lease of an
#    empty template, dump it, convert the dump to a goose migration);
# 2. run Django's test runner (testdbd.django.TestRunner) on a lease;
# 3. run pytest-django with pytest-xdist, one lease per worker.
# Every lease is released, also when a step fails.
# Needs testdbd on PATH, mariadb-dump, and Debian's python3-django,
# python3-dj-database-url, python3-pymysql, python3-pytest-django and
# python3-pytest-xdist; the testdbd package (pip install ./clients/python)
# is used from this checkout when it is not installed.
set -euo pipefail
cd "$(dirname "$0")"
export TESTDBD_ADDR=${TESTDBD_ADDR:-127.0.0.1:8080}
export PYTHONDONTWRITEBYTECODE=1 # keep the tree clean
py=${PYTHON:-python3}
if ! "$py" -c 'import testdbd.django' 2>/dev/null; then
  export PYTHONPATH=$PWD/../../clients/python/src${PYTHONPATH:+:$PYTHONPATH}
fi
build=$(mktemp -d)
lease=""
cleanup() {
  if [[ -n $lease ]]; then testdbd release "$lease" >/dev/null || true; fi
  rm -rf "$build"
}
trap cleanup EXIT

# 1. The template.
mkdir -p "$build/empty" "$build/goose"
printf -- '-- +goose Up\nSELECT 1;\n' >"$build/empty/00001_empty.sql"
testdbd template ensure --name empty --migrations-dir "$build/empty" --upload
eval "$(testdbd lease --template empty --format env)"
lease=$TESTDBD_LEASE_ID # released by cleanup if a step below fails
"$py" manage.py migrate --no-input
mariadb-dump -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" \
  --routines --events --ignore-table="$DB_DATABASE.goose_db_version" "$DB_DATABASE" >"$build/schema.sql"
testdbd release "$lease"
lease=""
unset DATABASE_URL TESTDBD_LEASE_ID
../shell/dump-to-goose.sh "$build/schema.sql" >"$build/goose/00001_schema.sql"
testdbd template ensure --name django-app --migrations-dir "$build/goose" --upload

# 2. Django's test runner: TEST_RUNNER = "testdbd.django.TestRunner" leases a
#    database of the template, runs the tests on it and releases it.
"$py" manage.py test --no-input

# 3. pytest-django, one lease per xdist worker (pytest.ini: testdbd_django).
#    -p loads the plugin where the package is not installed (a no-op where it is).
"$py" -m pytest -q -p no:cacheprovider -p testdbd.pytest_plugin --basetemp "$build/pytest" -n 3
echo "django example: ok"
