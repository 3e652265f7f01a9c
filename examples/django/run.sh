#!/usr/bin/env bash
# The Django guide (docs/django.md), end to end:
#
#   examples/django/run.sh      # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
#
# 1. build the template with Django's own migrations: manage.py migrate runs
#    against a scratch template database, only when no build of these
#    migrations is live on the daemon or in its template cache;
# 2. run Django's test runner (testdbd.django.TestRunner) on a lease;
# 3. run pytest-django with pytest-xdist, one lease per worker.
# Every lease is released, also when a step fails.
# Needs testdbd on PATH and Debian's python3-django, python3-dj-database-url,
# python3-pymysql, python3-pytest-django and python3-pytest-xdist; the
# testdbd package (pip install ./clients/python) is used from this checkout
# when it is not installed.
set -euo pipefail
cd "$(dirname "$0")"
export TESTDBD_ADDR=${TESTDBD_ADDR:-127.0.0.1:8080}
export PYTHONDONTWRITEBYTECODE=1 # keep the tree clean
py=${PYTHON:-python3}
if ! "$py" -c 'import testdbd.django' 2>/dev/null; then
  export PYTHONPATH=$PWD/../../clients/python/src${PYTHONPATH:+:$PYTHONPATH}
fi
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

# 1. The template. What shapes the schema: this project's migrations and
#    settings, and the migrations of the Django installed (its contrib apps).
django=$("$py" -c 'import django, os; print(os.path.dirname(django.__file__))')
# (Assigned first: set -e does not see a failure inside eval "$(...)".)
exports=$(testdbd template ensure --name django-app --format env \
  --hash-files 'blog/migrations/*.py' --hash-files 'mysite/settings.py' \
  --hash-files "$django/contrib/**/migrations/*.py" \
  -- "$py" manage.py migrate --no-input)
eval "$exports"
export TESTDBD_TEMPLATE_HASH # the test runner and the plugin pin their leases to this build

# 2. Django's test runner: TEST_RUNNER = "testdbd.django.TestRunner" leases a
#    database of the template, runs the tests on it and releases it.
"$py" manage.py test --no-input

# 3. pytest-django, one lease per xdist worker (pytest.ini: testdbd_django).
#    -p loads the plugin where the package is not installed (a no-op where it is).
"$py" -m pytest -q -p no:cacheprovider -p testdbd.pytest_plugin --basetemp "$build/pytest" -n 3
echo "django example: ok"
