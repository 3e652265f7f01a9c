#!/usr/bin/env bash
# Builds a server image from another Debian suite's packages, without any
# image registry: `debootstrap --variant=minbase` installs the suite's
# <flavor>-server-core and <flavor>-client-core in a root filesystem, which
# is trimmed (documentation, man pages, locales, apt's lists and caches, Perl,
# client plugins and tools a server image does not need), given a pristine
# datadir at /testdbd/seed (`mysqld --initialize-insecure` or
# `mariadb-install-db`, with the redo log size testdbd starts servers with)
# and `docker import`ed. Nothing is pulled from an image registry; the
# packages come from the Debian mirror the host's apt uses (MIRROR=... to
# override).
#
# Usage: scripts/build-suite-image.sh FLAVOR SUITE [MAJOR.MINOR [IMAGE]]
#   scripts/build-suite-image.sh mysql sid 9.7        -> testdbd/mysql:9.7-local
#   scripts/build-suite-image.sh mariadb trixie 11.8  -> testdbd/mariadb:11.8-local
#
# The tag is the major.minor of the server version the suite has now; when
# that differs from MAJOR.MINOR the image is named after the actual version
# and a warning says so. IMAGE names the image explicitly. FORCE=1
# rebuilds an image that is up to date.
#
# Idempotent and cheap when nothing changed: the suite's package index is
# kept under .tools/images/ and refreshed with apt (a second or two), and the
# image carries a label (io.testdbd.image-key) with the suite, the server and
# client package versions and this script's checksum; it is rebuilt only when
# one of them changes. The debootstrapped root filesystem is kept under
# .tools/images/ too (keyed by the package versions), so a change of this
# script alone rebuilds in seconds; downloaded .debs are kept for the next
# debootstrap. Without a reachable Docker engine it says so and does nothing.
set -euo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$self")/.."

if [ $# -lt 2 ]; then
  echo "usage: $0 FLAVOR(mysql|mariadb) SUITE [MAJOR.MINOR [IMAGE]]" >&2
  exit 2
fi
flavor=$1 suite=$2 expect=${3:-} image=${4:-}
case $flavor in
  mysql | mariadb) ;;
  *) echo "build-suite-image: unknown flavor $flavor (mysql or mariadb)" >&2; exit 2 ;;
esac
packages=("$flavor-server-core" "$flavor-client-core")
# The redo log size of the seed datadir; must equal what testdbd starts the
# server with (instance.InnoDBLogFileBytes for MariaDB's innodb_log_file_size,
# innodb_redo_log_capacity for MySQL).
log_file_size=8388608
# Bump when the debootstrap step itself changes (its options or the package
# list), so that the cached root filesystem is rebuilt.
base_version=1

say() { echo "build-suite-image: $*" >&2; }

if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  say "no Docker engine reachable: skipping the $flavor image from Debian $suite"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  say "must run as root (debootstrap and chroot)"
  exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

cache=$PWD/.tools/images
state=$cache/$flavor-$suite
mkdir -p "$state"
# One build per flavor and suite at a time (make -j images).
exec 9>"$state/lock"
flock 9

# The Debian mirror the host's apt uses for its main suite.
mirror=${MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 'Identifier: Packages' 'Label: Debian' 'Component: main' 2>/dev/null | sed -n 1p)}
if [ -z "$mirror" ]; then
  say "cannot tell which Debian mirror the host's apt uses: set MIRROR=<url of a Debian archive>"
  exit 1
fi
mirror=${mirror%/}

# The suite's package index, in a private apt state under .tools/images.
aptdir=$cache/apt-$suite
mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
echo "deb [target=Packages signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$aptdir/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$aptdir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o Dir::State::Lists="$aptdir/lists" -o Dir::Cache="$aptdir/cache" -o Dir::State::status=/dev/null
  -o APT::Architecture=amd64 -o Debug::NoLocking=1)

current_key() { docker image inspect -f '{{ index .Config.Labels "io.testdbd.image-key" }}' "$1" 2>/dev/null || true; }

if ! apt-get "${apt_opts[@]}" -qq --error-on=any update >"$state/apt-update.log" 2>&1; then
  cat "$state/apt-update.log" >&2
  say "cannot refresh Debian $suite's package index from $mirror"
  have=${image:-${expect:+testdbd/$flavor:$expect-local}}
  if [ -n "$have" ] && [ -n "$(current_key "$have")" ]; then
    say "keeping the existing $have"
    exit 0
  fi
  exit 1
fi
# The packages' versions, read straight from the index (apt-cache would parse
# all of it into a cache first, which takes longer than the update).
declare -A version
while read -r p v; do version[$p]=$v; done < <(
  /usr/lib/apt/apt-helper cat-file "$aptdir"/lists/*_"$suite"_main_binary-amd64_Packages* |
    awk -v want="${packages[*]}" 'BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) W[w[i]] = 1 }
      /^Package: / { p = $2 } /^Version: / { if (p in W) print p, $2 }')
for p in "${packages[@]}"; do
  if [ -z "${version[$p]:-}" ]; then
    say "Debian $suite has no package $p"
    exit 1
  fi
done
server_version=${version[$flavor-server-core]}
# 1:11.8.9+ds-0+deb13u1 -> 11.8; 9.7.4-2 -> 9.7
majmin=$(echo "${server_version#*:}" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
image=${image:-testdbd/$flavor:$majmin-local}
if [ -n "$expect" ] && [ "$expect" != "$majmin" ]; then
  say "WARNING: Debian $suite now has $flavor $server_version, not $expect: the image is $image"
fi

script_sum=$(sha256sum "$self" | cut -c1-16)
key_of() { # the image key for a set of versions: suite, each package, this script
  local k="suite=$suite" p
  for p in "${packages[@]}"; do k+=" $p=$1"; shift; done
  echo "$k script=$script_sum"
}
vers=()
for p in "${packages[@]}"; do vers+=("${version[$p]}"); done
key=$(key_of "${vers[@]}")
if [ "$(current_key "$image")" = "$key" ] && [ -z "${FORCE:-}" ]; then
  say "$image is up to date ($key)"
  exit 0
fi
old_id=$(docker image inspect -f '{{ .Id }}' "$image" 2>/dev/null || true)
started=$(date +%s)

# The debootstrapped root filesystem, kept until the package versions change.
base=$state/base
base_key="v$base_version suite=$suite"
for p in "${packages[@]}"; do base_key+=" $p=${version[$p]}"; done
if [ ! -d "$base" ] || [ "$(cat "$state/base.key" 2>/dev/null)" != "$base_key" ]; then
  say "debootstrap $suite with ${packages[*]} (about a minute)"
  rm -rf "$base" "$base.tmp" "$state/base.key"
  mkdir -p "$state/debs"
  if ! debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
    --cache-dir="$state/debs" "$suite" "$base.tmp" "$mirror" >"$state/debootstrap.log" 2>&1; then
    tail -n 30 "$state/debootstrap.log" >&2
    say "debootstrap failed (full log: $state/debootstrap.log)"
    rm -rf "$base.tmp"
    exit 1
  fi
  # apt's caches and lists are rebuilt by apt on demand; nothing here needs them.
  rm -rf "$base.tmp"/var/cache/apt/* "$base.tmp"/var/lib/apt/lists/*
  # Keep only the .debs of what was installed now.
  installed=$(chroot "$base.tmp" dpkg-query -W -f '${Package}_${Version}_${Architecture}.deb\n' | sed 's/:/%3a/')
  for f in "$state/debs"/*.deb; do
    [ -e "$f" ] || continue
    grep -qxF "$(basename "$f")" <<<"$installed" || rm -f "$f"
  done
  mv "$base.tmp" "$base"
  echo "$base_key" >"$state/base.key"
fi
# The versions actually installed name the image (the mirror may have moved
# on since the index was read).
vers=()
for p in "${packages[@]}"; do
  vers+=("$(chroot "$base" dpkg-query -W -f '${Version}' "$p")")
done
key=$(key_of "${vers[@]}")
server_version=${vers[0]}

say "building $image from Debian $suite's $flavor $server_version"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
cp -a "$base" "$root"

# incontainer CMD...: runs CMD chrooted in the root filesystem, in its own
# mount, PID and UTS namespaces with /proc mounted (gone when it exits) and
# the host name "localhost", so that no account or grant in the seed names
# the build machine.
incontainer() {
  unshare --mount --pid --uts --fork --mount-proc="$root/proc" \
    sh -c 'hostname localhost && exec chroot "$@"' incontainer "$root" "$@"
}

# --- trim --------------------------------------------------------------------
# Perl is only there for the server package's helper scripts (mysqld_multi,
# mysqldumpslow, mytop, ...), which testdbd never runs.
perl_pkgs=$(chroot "$root" dpkg-query -W -f '${Package}\n' | grep -E '^(perl|perl-modules-.*|libperl5.*)$' || true)
if [ -n "$perl_pkgs" ]; then
  # shellcheck disable=SC2086
  chroot "$root" dpkg --purge --force-depends $perl_pkgs >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; exit 1; }
fi
# Documentation (copyright files stay), man and info pages, translations.
find "$root/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,info,locale,lintian,linda,bash-completion,perl5} \
  "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
  "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/log/*
# Server error messages in languages other than English (lc_messages_dir).
for d in "$root"/usr/share/mysql/*/ "$root"/usr/share/mariadb/*/; do
  if [ -e "$d/errmsg.sys" ] && [ "$(basename "$d")" != english ]; then rm -rf "$d"; fi
done
# Test suites, if a package ever ships them.
rm -rf "$root"/usr/share/mysql/mysql-test "$root"/usr/share/mysql-test "$root"/usr/lib/mysql-test
case $flavor in
  mysql)
    # Client-side authentication plugins (Kerberos, OCI, WebAuthn, OpenID)
    # and telemetry: the image's clients connect to their own server only.
    rm -f "$root"/usr/lib/mysql/plugin/*_client.so
    # Client tools for MyISAM, load testing, keyrings, binlogs and offline
    # checks: kept are mysql, mysqladmin, mysqldump, mysql_tzinfo_to_sql,
    # my_print_defaults and perror.
    for b in myisamchk myisampack myisam_ftdump myisamlog mysqlslap mysqlimport mysqlshow mysqlcheck \
      mysqlbinlog mysql_migrate_keyring mysql_secure_installation mysql_config_editor ibd2sdi innochecksum \
      mysqld_multi mysqld_safe mysqldumpslow lz4_decompress zlib_decompress; do
      rm -f "$root/usr/bin/$b"
    done
    ;;
esac

# --- what the start script expects -----------------------------------------
mkdir -p "$root/var/lib/mysql" "$root/run/mysqld" "$root/testdbd"
chmod 1777 "$root/tmp"
# The compiled-in secure_file_priv directory of Debian's mysqld (the server
# refuses to start when it is missing), as in the official images.
if [ "$flavor" = mysql ]; then
  install -d -m 0700 "$root/var/lib/mysql-files"
fi
grep -q '^mysql:' "$root/etc/group" || echo 'mysql:x:999:' >>"$root/etc/group"
grep -q '^mysql:' "$root/etc/passwd" || echo 'mysql:x:999:999:MySQL Server:/var/lib/mysql:/usr/sbin/nologin' >>"$root/etc/passwd"

# --- the pristine datadir --------------------------------------------------------
# Root authenticates by Unix socket only (MariaDB) or has no password (MySQL,
# whose start sets one); testdbd adds its own admin account at start. MySQL's
# is made without doublewrite files, which testdbd's servers do not use.
case $flavor in
  mysql)
    if ! incontainer /usr/sbin/mysqld --no-defaults --initialize-insecure --user=root --datadir=/testdbd/seed \
      --innodb-redo-log-capacity="$log_file_size" --innodb-doublewrite=OFF --log-error=/tmp/init.log >"$work/init.out" 2>&1; then
      cat "$work/init.out" "$root/tmp/init.log" >&2 || true
      say "mysqld --initialize-insecure failed"
      exit 1
    fi
    # The server UUID is generated per container at its first start.
    rm -f "$root/testdbd/seed/auto.cnf"
    ;;
  mariadb)
    if ! incontainer /usr/bin/mariadb-install-db --no-defaults --datadir=/testdbd/seed --user=root \
      --auth-root-authentication-method=socket --auth-root-socket-user=root \
      --skip-test-db --force --innodb-log-file-size="$log_file_size" >"$work/init.out" 2>&1; then
      cat "$work/init.out" >&2
      say "mariadb-install-db failed"
      exit 1
    fi
    ;;
esac
# MariaDB 11.4 and later enable TLS by default and, without a certificate,
# generate one at every start (about 1.5 s here). A certificate made once
# at build time spares that when the server is started with
# --ssl-cert=/testdbd/tls/server-cert.pem --ssl-key=/testdbd/tls/server-key.pem.
# (MySQL keeps the certificates --initialize made in the seed datadir.)
if [ "$flavor" = mariadb ] && command -v openssl >/dev/null 2>&1; then
  install -d -m 0755 "$root/testdbd/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 36500 -subj "/CN=testdbd $flavor" \
    -keyout "$root/testdbd/tls/server-key.pem" -out "$root/testdbd/tls/server-cert.pem" >/dev/null 2>&1
fi
rm -rf "${root:?}"/tmp/* "$root"/var/log/*
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' >"$root/testdbd/packages"

tar -C "$root" --numeric-owner -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["/bin/sh"]' \
  -c "LABEL io.testdbd.image-key=\"$key\"" \
  -c "LABEL io.testdbd.engine=\"$flavor $server_version\"" \
  -m "testdbd: $flavor $server_version from Debian $suite" \
  - "$image" >/dev/null

new_id=$(docker image inspect -f '{{ .Id }}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
say "built $image ($(docker image inspect -f '{{ .Size }}' "$image" | awk '{printf "%d MB", $1/1e6}'), $(($(date +%s) - started)) s)"
