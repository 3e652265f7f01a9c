#!/usr/bin/env bash
# The Django guide (docs/django.md), end to end:
#
#   examples/django/run.sh      # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
#
# 1. build the template from Django's own migrations (migrate a lease of an
#    empty template, dump it, convert the dump to a goose migration);
# 2. run Django's test runner on one lease (serial);
# 3. run pytest-django with pytest-xdist, one lease per worker.
# Needs testdbd on PATH, mariadb-dump, and Debian's python3-django,
# python3-dj-database-url, python3-pymysql, python3-pytest-django and
# python3-pytest-xdist. CI does not install the Django packages; this script
# was run by hand with Debian 12's (Django 3.2, pytest-django 4.5).
set -euo pipefail
cd "$(dirname "$0")"
export TESTDBD_ADDR=${TESTDBD_ADDR:-127.0.0.1:8080}
export PYTHONDONTWRITEBYTECODE=1 # keep the tree clean
py=${PYTHON:-python3}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

# 1. The template.
mkdir -p "$build/empty" "$build/goose"
printf -- '-- +goose Up\nSELECT 1;\n' >"$build/empty/00001_empty.sql"
testdbd template ensure --name empty --migrations-dir "$build/empty" --upload
eval "$(testdbd lease --template empty --format env)"
"$py" manage.py migrate --no-input
mariadb-dump -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" \
  --routines --events --ignore-table="$DB_DATABASE.goose_db_version" "$DB_DATABASE" >"$build/schema.sql"
testdbd release "$TESTDBD_LEASE_ID"
../shell/dump-to-goose.sh "$build/schema.sql" >"$build/goose/00001_schema.sql"
testdbd template ensure --name django-app --migrations-dir "$build/goose" --upload

# 2. Django's test runner on one lease.
eval "$(testdbd lease --template django-app --format env)"
"$py" manage.py test --keepdb --no-input
testdbd release "$TESTDBD_LEASE_ID"
unset DATABASE_URL TESTDBD_LEASE_ID

# 3. pytest-django, one lease per xdist worker.
"$py" -m pytest -q -p no:cacheprovider -n 3
echo "django example: ok"
