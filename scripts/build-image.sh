#!/usr/bin/env bash
# Builds the MariaDB image the Docker provider uses by default, without any
# image registry: the host's Debian MariaDB binaries, every library they load,
# a shell and the few tools testdbd's start script needs, and a pristine
# datadir (/testdbd/seed) are put in a root filesystem and `docker import`ed.
#
# Usage: scripts/build-image.sh [image]   (default testdbd/mariadb:10.11-local)
#
# Idempotent: the image carries a label with the host's mariadb-server-core
# version and this script's checksum, and is rebuilt only when either
# changes. Without a reachable Docker engine it says so and does nothing, so
# that `make test` still runs (the Docker tests then skip).
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."

image=${1:-${IMAGE:-testdbd/mariadb:10.11-local}}
# The redo log size of the seed datadir; must equal instance.InnoDBLogFileBytes.
log_file_size=8388608
# The undo tablespaces of the seed datadir; must equal instance.InitArgs
# (a server started from a datadir without them creates them only after a
# slow shutdown).
undo_tablespaces=3

if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "build-image: no Docker engine reachable: skipping $image (the Docker provider's tests will skip)" >&2
  exit 0
fi

scripts/install-deps.sh server

version=$(dpkg-query -W -f='${Version}' mariadb-server-core)
key="mariadb-server-core=$version script=$(sha256sum "$self" | cut -c1-16)"
current=$(docker image inspect -f '{{ index .Config.Labels "io.testdbd.image-key" }}' "$image" 2>/dev/null || true)
if [ "$current" = "$key" ]; then
  echo "build-image: $image is up to date ($key)"
  exit 0
fi
old_id=$(docker image inspect -f '{{ .Id }}' "$image" 2>/dev/null || true)

echo "build-image: building $image from the host's MariaDB $version"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root"/usr/{bin,sbin,lib,lib64,share} "$root"/etc "$root"/var/lib/mysql "$root"/run/mysqld "$root"/testdbd
# Debian 12's merged /usr: /bin, /sbin, /lib and /lib64 are links into /usr.
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
install -d -m 1777 "$root/tmp"

# copy <path>: copies a file to the same path under the root, following links.
copy() {
  mkdir -p "$root$(dirname "$1")"
  cp -L "$1" "$root$1"
}

binaries=(/usr/sbin/mariadbd /usr/bin/my_print_defaults
  /usr/bin/dash /usr/bin/cp /usr/bin/cat /usr/bin/sed /usr/bin/uname /usr/bin/dirname
  /usr/bin/mkdir /usr/bin/chmod /usr/bin/chown /usr/bin/rm /usr/bin/ls)
for b in "${binaries[@]}"; do
  copy "$b"
done
[ -x /usr/bin/resolveip ] && copy /usr/bin/resolveip
copy /usr/bin/mariadb-install-db
ln -s dash "$root/usr/bin/sh"

# Every shared library the binaries load, under the name they load it by.
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
printf 'root:x:0:0:root:/root:/bin/sh\nmysql:x:999:999:MariaDB:/var/lib/mysql:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nmysql:x:999:\n' >"$root/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"

# The pristine datadir every container copies into its tmpfs datadir: root
# authenticates by Unix socket only; testdbd adds its own admin account at
# start (--init-file). As root it is made under the host name "localhost"
# (a UTS namespace of its own), so that no grant in the seed names the build
# machine (each container would log "'proxies_priv' entry '@% root@<host>'
# ignored in --skip-name-resolve mode").
user_opt=() host_opt=()
if [ "$(id -u)" -eq 0 ]; then
  user_opt=(--user=root)
  host_opt=(unshare --uts sh -c 'hostname localhost && exec "$@"' localhost)
fi
if ! "${host_opt[@]}" mariadb-install-db --no-defaults --datadir="$root/testdbd/seed" "${user_opt[@]}" \
  --auth-root-authentication-method=socket --auth-root-socket-user=root \
  --skip-test-db --force --innodb-log-file-size="$log_file_size" \
  --innodb-undo-tablespaces="$undo_tablespaces" >"$work/install.log" 2>&1; then
  cat "$work/install.log" >&2
  echo "build-image: mariadb-install-db failed" >&2
  exit 1
fi

tar -C "$root" --numeric-owner --owner=0 --group=0 -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["/bin/sh"]' \
  -c "LABEL io.testdbd.image-key=\"$key\"" \
  -c "LABEL io.testdbd.engine=\"mariadb $version\"" \
  -m "testdbd: MariaDB $version from the host's Debian packages" \
  - "$image" >/dev/null

new_id=$(docker image inspect -f '{{ .Id }}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
echo "build-image: built $image ($(docker image inspect -f '{{ .Size }}' "$image" | awk '{printf "%d MB", $1/1e6}'))"
