#!/usr/bin/env bash
# Turns a mysqldump / mariadb-dump file into one goose migration, so that a
# schema built by another tool (Laravel's or Django's migrations, Rails,
# Flyway, ...) can be a testdbd template.
#
#   examples/shell/dump-to-goose.sh dump.sql > migrations/00001_schema.sql
#
# The dump is sent to the server as one multi-statement batch (testdbd runs
# migrations with multi-statements enabled), so DELIMITER lines go and the
# ';;' they introduced become ';'. DEFINER clauses go too: the dump's users
# do not exist on testdbd's servers, and a trigger or view whose definer is
# missing fails when it runs. Dump with --routines --events (triggers are
# dumped by default) and the rows you want every test to start with, e.g.
# the framework's migrations table.
set -euo pipefail

if [[ $# -ne 1 || ! -r $1 ]]; then
  echo "usage: $0 DUMP.sql > 00001_schema.sql" >&2
  exit 2
fi

echo '-- +goose NO TRANSACTION'
echo '-- +goose Up'
echo '-- +goose StatementBegin'
sed -E \
  -e '/^DELIMITER /d' \
  -e 's/;;$/;/' \
  -e 's/ ?DEFINER=(`[^`]*`|[^ @]*)@(`[^`]*`|[^ *]*)//g' \
  "$1"
echo '-- +goose StatementEnd'
