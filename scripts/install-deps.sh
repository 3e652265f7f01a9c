#!/usr/bin/env bash
# Installs what `make run` and `make test` need and is missing, from Debian's
# packages. Usage: scripts/install-deps.sh server|examples|clients|browser ...
#   server    MariaDB server and client (mariadbd, mariadb-install-db, mariadb)
#   examples  php-cli, php-mysql, python3-pymysql and mariadb-dump for the examples;
#             phpunit, php-laravel-framework (Laravel 8) and php-faker for
#             examples/laravel
#   clients   what the tests of clients/python and clients/php use: python3-venv,
#             setuptools and wheel (an offline pip install), pytest, pytest-xdist,
#             Django, dj-database-url, pytest-django, cryptography (PyMySQL logging
#             in to MySQL), tblib (Django's --parallel reports failures with it);
#             phpunit and composer
#   browser   chromium, which the dashboard's test drives headless
set -euo pipefail

missing=()
need() { # need <command-or-file> <package>
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -e "$1" ]; then missing+=("$2"); fi
}
for group in "$@"; do
  case "$group" in
    server)
      need mariadbd mariadb-server-core
      need mariadb-install-db mariadb-server-core
      need mariadb mariadb-client-core
      ;;
    examples)
      if ! command -v php >/dev/null 2>&1; then
        missing+=(php-cli php-mysql)
      elif ! grep -qix pdo_mysql <<<"$(php -m 2>/dev/null)"; then # not a pipe: grep -q would cut php off (pipefail)
        missing+=(php-mysql)
      fi
      # Debian's python3 is the one python3-pymysql installs into; a pyenv
      # or virtualenv python3 earlier on PATH would never see it.
      py=python3
      [ -x /usr/bin/python3 ] && py=/usr/bin/python3
      if ! "$py" -c 'import pymysql' >/dev/null 2>&1; then missing+=(python3-pymysql); fi
      need mariadb-dump mariadb-client # examples/shell/dump-to-goose.sh's test
      # examples/laravel: Debian's Laravel 8 and Faker, autoloaded from /usr/share/php
      need phpunit phpunit
      need /usr/share/php/Illuminate/Foundation/Application.php php-laravel-framework
      need /usr/share/php/Faker/autoload.php php-faker
      ;;
    clients)
      py=python3
      [ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's: python3-* packages install into it
      for m in ensurepip:python3-venv setuptools:python3-setuptools wheel:python3-wheel pymysql:python3-pymysql \
        pytest:python3-pytest xdist:python3-pytest-xdist django:python3-django \
        dj_database_url:python3-dj-database-url pytest_django:python3-pytest-django \
        cryptography:python3-cryptography tblib:python3-tblib; do
        if ! "$py" -c "import ${m%%:*}" >/dev/null 2>&1; then missing+=("${m#*:}"); fi
      done
      if ! command -v php >/dev/null 2>&1; then
        missing+=(php-cli php-mysql)
      elif ! grep -qix pdo_mysql <<<"$(php -m 2>/dev/null)"; then # not a pipe: grep -q would cut php off (pipefail)
        missing+=(php-mysql)
      fi
      need phpunit phpunit
      need composer composer
      need mariadb mariadb-client # the clients' tests and examples connect with it
      ;;
    browser)
      need /usr/bin/chromium chromium # dashboard/browser_test.go
      ;;
    *) echo "install-deps: unknown group $group" >&2; exit 2 ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
echo "install-deps: installing $pkgs"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root or sudo to install: $pkgs" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq -o DPkg::Lock::Timeout=600
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 $pkgs
