#!/usr/bin/env bash
# Builds testdbd's all-in-one image, without any image registry: the
# testdbd binary (static) and the host's Debian MariaDB server with every
# library it loads, put in a root filesystem and `docker import`ed. The
# daemon runs its servers natively inside the container, with their
# datadirs on a tmpfs the container is given (--tmpfs /testdbd/data; no
# extra privileges), each listening on a port of 33060-33099, which the
# container publishes with the same numbers, and leases carry 127.0.0.1:
#
#   docker run --rm -d --name testdbd --tmpfs /testdbd/data -v "$PWD:/work:ro" \
#     -p 127.0.0.1:8080:8080 -p 127.0.0.1:9090:9090 -p 127.0.0.1:33060-33099:33060-33099 \
#     testdbd/testdbd
#
# Usage: scripts/build-daemon-image.sh [image]   (default testdbd/testdbd:latest)
#
# Idempotent: the image carries a label with the host's mariadb-server-core
# version, this script's checksum and the binary's, and is rebuilt only when
# one of them changes (the binary changes with the code and its version).
# Without a reachable Docker engine it says so and does nothing.
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."

image=${1:-testdbd/testdbd:latest}
go=${GO:-go}

if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "build-daemon-image: no Docker engine reachable: skipping $image" >&2
  exit 0
fi

scripts/install-deps.sh server

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
# Static, so that the image needs no C library for it.
CGO_ENABLED=0 "$go" build -trimpath -ldflags "-X github.com/testdbd/testdbd.Version=$version" \
  -o "$work/testdbd" ./cmd/testdbd

mariadb_version=$(dpkg-query -W -f='${Version}' mariadb-server-core)
key="mariadb-server-core=$mariadb_version script=$(sha256sum "$self" | cut -c1-16) testdbd=$(sha256sum "$work/testdbd" | cut -c1-16)"
current=$(docker image inspect -f '{{ index .Config.Labels "io.testdbd.image-key" }}' "$image" 2>/dev/null || true)
if [ "$current" = "$key" ]; then
  echo "build-daemon-image: $image is up to date ($key)"
  exit 0
fi
old_id=$(docker image inspect -f '{{ .Id }}' "$image" 2>/dev/null || true)

echo "build-daemon-image: building $image: testdbd $version and the host's MariaDB $mariadb_version"
root=$work/rootfs
mkdir -p "$root"/usr/{bin,sbin,lib,lib64,share,local/bin} "$root"/etc "$root"/var/lib/testdbd \
  "$root"/testdbd/data "$root"/work "$root"/run/mysqld
# Debian 12's merged /usr: /bin, /sbin, /lib and /lib64 are links into /usr.
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
install -d -m 1777 "$root/tmp"

# copy <path>: copies a file to the same path under the root, following links.
copy() {
  mkdir -p "$root$(dirname "$1")"
  cp -L "$1" "$root$1"
}

# The server, what mariadb-install-db runs (the native provider initializes
# a pristine datadir with it once per container), and stat for the
# entrypoint's tmpfs check.
binaries=(/usr/sbin/mariadbd /usr/bin/my_print_defaults
  /usr/bin/dash /usr/bin/cp /usr/bin/cat /usr/bin/sed /usr/bin/uname /usr/bin/dirname
  /usr/bin/mkdir /usr/bin/chmod /usr/bin/chown /usr/bin/rm /usr/bin/ls /usr/bin/stat)
for b in "${binaries[@]}"; do
  copy "$b"
done
[ -x /usr/bin/resolveip ] && copy /usr/bin/resolveip
copy /usr/bin/mariadb-install-db
ln -s dash "$root/usr/bin/sh"
for b in "${binaries[@]}" /usr/bin/resolveip; do
  [ -e "$b" ] || continue
  ldd "$b" | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}'
done | sort -u | while read -r lib; do
  copy "$lib"
done
cp -a /usr/share/mysql "$root/usr/share/mysql"
if [ -d /usr/lib/mysql/plugin ]; then
  mkdir -p "$root/usr/lib/mysql"
  cp -a /usr/lib/mysql/plugin "$root/usr/lib/mysql/plugin"
fi
install -m 0755 "$work/testdbd" "$root/usr/bin/testdbd"
# testdbd, the unprivileged user the daemon runs its servers as (the image
# has no useradd to create it at run time).
printf 'root:x:0:0:root:/root:/bin/sh\nmysql:x:999:999:MariaDB:/var/lib/mysql:/bin/false\ntestdbd:x:998:998:testdbd servers:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nmysql:x:999:\ntestdbd:x:998:\n' >"$root/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"

# The entrypoint: `serve` by default, any testdbd command otherwise (status,
# lease, ... against the daemon in the same container); a datadir root that
# is not a tmpfs is refused with the flag that gives one.
cat >"$root/usr/local/bin/testdbd-entrypoint" <<'EOF'
#!/bin/sh
set -eu
[ $# -eq 0 ] && set -- serve
if [ "$1" = serve ] && [ -n "${TESTDBD_DATADIR_ROOT:-}" ] && [ "${TESTDBD_ALLOW_DISK:-}" != true ]; then
  mkdir -p "$TESTDBD_DATADIR_ROOT"
  fs=$(stat -f -c %T "$TESTDBD_DATADIR_ROOT")
  if [ "$fs" != tmpfs ]; then
    echo "testdbd: $TESTDBD_DATADIR_ROOT, where the servers' datadirs go, is not a tmpfs ($fs): give the container one:" \
      "docker run --tmpfs $TESTDBD_DATADIR_ROOT ..., or in compose.yaml: tmpfs: [$TESTDBD_DATADIR_ROOT]" >&2
    exit 1
  fi
fi
exec /usr/bin/testdbd "$@"
EOF
chmod 0755 "$root/usr/local/bin/testdbd-entrypoint"

tar -C "$root" --numeric-owner --owner=0 --group=0 -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV TESTDBD_HTTP_ADDR=0.0.0.0:8080' \
  -c 'ENV TESTDBD_GRPC_ADDR=0.0.0.0:9090' \
  -c 'ENV TESTDBD_INSECURE=true' \
  -c 'ENV TESTDBD_STATE_DIR=/var/lib/testdbd' \
  -c 'ENV TESTDBD_DATADIR_ROOT=/testdbd/data' \
  -c 'ENV TESTDBD_SERVER_PORTS=33060-33099' \
  -c 'ENV TESTDBD_ADVERTISE_HOST=127.0.0.1' \
  -c 'ENV TESTDBD_WARM=1' \
  -c 'WORKDIR /work' \
  -c 'EXPOSE 8080 9090 33060-33099' \
  -c 'ENTRYPOINT ["/usr/local/bin/testdbd-entrypoint"]' \
  -c 'CMD ["serve"]' \
  -c "LABEL io.testdbd.image-key=\"$key\"" \
  -c "LABEL io.testdbd.version=\"$version\"" \
  -c "LABEL io.testdbd.engine=\"mariadb $mariadb_version\"" \
  -m "testdbd $version with MariaDB $mariadb_version from the host's Debian packages" \
  - "$image" >/dev/null

new_id=$(docker image inspect -f '{{ .Id }}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
echo "build-daemon-image: built $image ($(docker image inspect -f '{{ .Size }}' "$image" | awk '{printf "%d MB", $1/1e6}'))"
