#!/usr/bin/env bash
# The Laravel guide (docs/laravel.md), end to end, on this Laravel 8
# application (108 tables, views, stored routines and a trigger, model
# factories, feature tests over HTTP, ids hard-coded in tests):
#
#   examples/laravel/run.sh [PROCESSES]   # a daemon at TESTDBD_ADDR (default 127.0.0.1:8080)
#
# 1. build the template with `php artisan migrate --seed`, through
#    `testdbd template ensure --hash-files`: only when no build of these
#    migrations and seeders is live on the daemon or in its template cache;
# 2. run the suite serially with PHPUnit: the TestdbdDatabase trait leases
#    one database and resets it after every test;
# 3. run it in PROCESSES worker processes (4 by default) with paratest.php:
#    Laravel's ParallelRunner calls testdbd's ParallelTesting hooks, which
#    lease a database per worker token and release it afterwards.
# Every lease is released, also when a step fails. EXAMPLE_RESET=testdbd-rollback
# runs the suite with RefreshDatabase and testdbd's rollback reset instead
# (tests/bootstrap.php).
# Needs testdbd on PATH and Debian's php-cli, php-mysql, phpunit,
# php-laravel-framework and php-faker (scripts/install-deps.sh examples);
# the testdbd package comes from this checkout (autoload.php).
set -euo pipefail
cd "$(dirname "$0")"
export TESTDBD_ADDR=${TESTDBD_ADDR:-127.0.0.1:8080}
processes=${1:-4}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
# Laravel's provider and package manifests, out of the tree.
export APP_SERVICES_CACHE=$cache/services.php APP_PACKAGES_CACHE=$cache/packages.php

# 1. The template. A failed build fails here: the assignment, unlike
#    eval "$(...)", passes the command's exit status on to set -e.
template=$(testdbd template ensure --name laravel-shop --format env \
  --hash-files 'database/migrations/**' --hash-files 'database/seeders/**' \
  -- php artisan migrate --force --seed)
eval "$template"
export TESTDBD_TEMPLATE TESTDBD_TEMPLATE_HASH # the trait and the hooks lease this build

# 2. Serially: tests/TestCase.php uses the TestdbdDatabase trait.
phpunit

# 3. In parallel, as `php artisan test --parallel --processes=N
#    --without-databases` would (without: Laravel would create a database
#    of its own per worker for suites with RefreshDatabase).
php paratest.php --processes "$processes" --without-databases
echo "laravel example: ok"
