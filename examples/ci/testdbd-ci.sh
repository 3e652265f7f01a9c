#!/usr/bin/env bash
# Runs a command, typically the test suite, against testdbd in Docker: the
# recipe for any CI system with a Docker engine (and a local machine).
#
#   examples/ci/testdbd-ci.sh go test -race ./...
#
# It starts the all-in-one image (make image-testdbd builds it) with the
# servers' datadirs on a tmpfs and their ports published on 127.0.0.1,
# exports TESTDBD_ADDR for the command, runs it in this directory (which
# the daemon sees, read-only, as its working directory: a migrations_dir
# such as "migrations" is read there), and removes the container however
# the command ends, keeping the daemon's log in testdbd.log. The exit
# status is the command's.
#
# Settings (environment): TESTDBD_IMAGE (testdbd/testdbd), TESTDBD_HTTP_PORT
# (18080: beside a daemon on the host's 8080), TESTDBD_SERVER_PORTS
# (33060-33099), and TESTDBD_TOKEN, passed to
# the daemon and left for the command when set. To build a template before
# the command, as a step of its own:
#
#   docker exec "$TESTDBD_CONTAINER" testdbd template ensure --name app --migrations-dir migrations
set -euo pipefail

[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]   (e.g. $0 go test ./...)" >&2; exit 2; }
image=${TESTDBD_IMAGE:-testdbd/testdbd}
http_port=${TESTDBD_HTTP_PORT:-18080}
server_ports=${TESTDBD_SERVER_PORTS:-33060-33099}
export TESTDBD_CONTAINER=testdbd-ci-$$

docker run -d --name "$TESTDBD_CONTAINER" --tmpfs /testdbd/data -v "$PWD:/work:ro" \
  -e TESTDBD_SERVER_PORTS="$server_ports" -e TESTDBD_TOKEN \
  -p "127.0.0.1:$http_port:8080" -p "127.0.0.1:$server_ports:$server_ports" \
  "$image" >/dev/null
cleanup() {
  docker logs "$TESTDBD_CONTAINER" >testdbd.log 2>&1 || true
  docker rm -f "$TESTDBD_CONTAINER" >/dev/null 2>&1 || true
}
trap cleanup EXIT

export TESTDBD_ADDR=127.0.0.1:$http_port
for _ in $(seq 120); do
  curl -fsS "http://$TESTDBD_ADDR/healthz" >/dev/null 2>&1 && break
  if [ "$(docker inspect -f '{{.State.Running}}' "$TESTDBD_CONTAINER" 2>/dev/null)" != true ]; then
    echo "testdbd-ci: the daemon's container exited:" >&2
    docker logs "$TESTDBD_CONTAINER" 2>&1 | tail -20 >&2
    exit 1
  fi
  sleep 1
done
curl -fsS "http://$TESTDBD_ADDR/healthz" >/dev/null || { echo "testdbd-ci: the daemon did not serve within 2 minutes; see testdbd.log" >&2; exit 1; }
echo "testdbd-ci: testdbd serves at $TESTDBD_ADDR (container $TESTDBD_CONTAINER)" >&2
"$@"
