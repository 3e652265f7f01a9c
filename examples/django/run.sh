#!/usr/bin/env bash
# The Django guide (docs/django.md), end to end:
#
#   examples/django/run.sh      # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
#
# 1. build the template with Django's own migrations: manage.py migrate runs
#    against a scratch template database, only when no build of these
#    migrations is live on the daemon or in its template cache;
# 2. run Django's test runner (testdbd.django.TestRunner) on a lease, then
#    with --parallel 4 on four leases, one per worker process;
# 3. run pytest-django with pytest-xdist, one lease per worker.
# Every lease is released, also when a step fails.
# Needs testdbd on PATH and Debian's python3-django, python3-dj-database-url,
# python3-pymysql, python3-pytest-django, python3-pytest-xdist and
# python3-tblib (Django's parallel runner needs it to report failures); the
# testdbd package (pip install ./clients/python) is used from this checkout
# when it is not installed.
set -euo pipefail
cd "$(dirname "$0")"
export TESTDBD_ADDR=${TESTDBD_ADDR:-127.0.0.1:8080}
export PYTHONDONTWRITEBYTECODE=1 # keep the tree clean
py=${PYTHON:-python3}
plugin=()
if ! "$py" -c 'import testdbd.django' 2>/dev/null; then
  export PYTHONPATH=$PWD/../../clients/python/src${PYTHONPATH:+:$PYTHONPATH}
  # Not installed: load the plugin by name; pytest.ini's required_plugins
  # (an installed distribution) does not hold then.
  plugin=(-p testdbd.pytest_plugin -o required_plugins=)
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
#    database of the template, runs the tests on it and releases it; with
#    --parallel 4, four leases of the same build, one per worker process.
"$py" manage.py test --no-input
"$py" manage.py test --no-input --parallel 4

# 3. pytest-django, one lease per xdist worker (pytest.ini: testdbd_django);
#    Django's class-based tests in blog/tests.py run there too.
"$py" -m pytest -q -p no:cacheprovider "${plugin[@]}" --basetemp "$build/pytest" -n 4
echo "django example: ok"
