package serverimage

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
)

// Paths inside the container. The datadir is at the path the official
// images declare as a volume; the providers mount memory there (a tmpfs, a
// memory-backed emptyDir), so that no disk-backed volume is created for it.
const (
	Datadir = "/var/lib/mysql"
	TmpDir  = "/tmp"
	// FilesDir is MariaDB's secure_file_priv (see instance.Hardening): an
	// empty directory owned by root that the server cannot write to.
	FilesDir = "/tmp/testdbd-files"
)

// ServerUser is the user servers run as in their container: the start
// script prepares the datadir as root, then the server drops to this user
// (--user). The official images and testdbd's own have it.
const ServerUser = "mysql"

// The server's TLS certificate, key and authority's certificate (PEM)
// reach the start script in these variables (a provider sets them, see
// TLSEnv); it writes them to
// TLSDir, on the container's tmpfs tmpdir, readable by ServerUser only, and
// unsets them before the server starts.
const (
	TLSCertEnv = "TESTDBD_TLS_CERT"
	TLSKeyEnv  = "TESTDBD_TLS_KEY"
	TLSCAEnv   = "TESTDBD_TLS_CA"
	TLSDir     = TmpDir + "/testdbd-tls"
)

// RenewTLSScript writes a renewed certificate, its key and the
// authority's certificate (TLSEnv) over the server's in TLSDir. It runs in
// the running container as ServerUser, with the shell alone (a trimmed
// image may have no mv or cat); the server reads the files when told to
// reload, after it has run.
const RenewTLSScript = `set -e
umask 077
printf '%s\n' "$` + TLSCertEnv + `" >` + TLSDir + `/server-cert.pem
printf '%s\n' "$` + TLSKeyEnv + `" >` + TLSDir + `/server-key.pem
printf '%s\n' "$` + TLSCAEnv + `" >` + TLSDir + `/ca.pem
`

// TLSEnv is the environment that hands a container its server
// certificate, its key and the authority's certificate.
func TLSEnv(certPEM, keyPEM, caPEM []byte) map[string]string {
	return map[string]string{TLSCertEnv: string(certPEM), TLSKeyEnv: string(keyPEM), TLSCAEnv: string(caPEM)}
}

// AdminUser is testdbd's account in every container, created at start with
// a random password and every privilege WITH GRANT OPTION.
const AdminUser = "testdbd_admin"

// InitFile is where the start script writes InitSQL inside the container
// (readable by the container's root and ServerUser only): the server runs
// it at every start. Whoever may exec in the container as root, as the
// host's Docker users may, can read the admin password there
// (AdminPassword).
const InitFile = "/run/testdbd/init.sql"

// Args are the server arguments a provider passes after the start script:
// the port and address to listen on, the caller's arguments, then the
// hardening every server gets.
func Args(e testdbd.Engine, port int, bindAddress string, extra []string) []string {
	args := append([]string{"--port=" + strconv.Itoa(port), "--bind-address=" + bindAddress}, extra...)
	return append(args, instance.Hardening(e, FilesDir)...)
}

// StartScript is the container's command, run as root. It finds the server
// binary, gives the datadir to ServerUser and initializes it (from the
// image's pristine /testdbd/seed when seed is set and the image has one,
// else with the engine's own tool and the options the engine's settings
// need at initialization, instance.InitArgs), creates MariaDB's empty
// secure_file_priv directory, writes the server's TLS certificate and key
// from TLSCertEnv, TLSKeyEnv and TLSCAEnv to TLSDir (then unset) and passes them to
// the server, or else the image's TLS certificate when it carries one at
// /testdbd/tls (MariaDB 11.4 and later otherwise generate one at every
// start, a second or two), writes the init file that creates
// testdbd's admin account (from $TESTDBD_INIT_SQL, then unset), and execs
// the server, which drops to ServerUser, with the arguments after the
// script ($@).
func StartScript(e testdbd.Engine, seed bool) string {
	useSeed := "0"
	if seed {
		useSeed = "1"
	}
	var initialize string
	initArgs := strings.Join(instance.InitArgs(e), " ")
	switch e.Flavor {
	case testdbd.MariaDB:
		initialize = `install=$(command -v mariadb-install-db || command -v mysql_install_db) || { echo "testdbd: the image has no mariadb-install-db" >&2; exit 127; }
  "$install" --no-defaults --datadir="$datadir" --user="$user" --auth-root-authentication-method=socket --auth-root-socket-user=root \
    --skip-test-db --force --innodb-log-file-size=` + strconv.Itoa(instance.InnoDBLogFileBytes) + ` ` + initArgs + ` >/tmp/testdbd-init.log 2>&1 \
    || { cat /tmp/testdbd-init.log >&2; echo "testdbd: mariadb-install-db failed" >&2; exit 1; }`
	default:
		initialize = `"$server" --no-defaults --initialize-insecure --user="$user" --datadir="$datadir" \
    --innodb-redo-log-capacity=` + strconv.Itoa(instance.InnoDBLogFileBytes) + ` --innodb-doublewrite=OFF --log-error=/tmp/testdbd-init.log \
    || { cat /tmp/testdbd-init.log >&2; echo "testdbd: mysqld --initialize-insecure failed" >&2; exit 1; }`
	}
	return `set -e
datadir=` + Datadir + `
user=` + ServerUser + `
server=
for b in mariadbd mysqld; do
  if command -v "$b" >/dev/null 2>&1; then server=$(command -v "$b"); break; fi
done
if [ -z "$server" ]; then echo "testdbd: neither mariadbd nor mysqld is in the image's PATH" >&2; exit 127; fi
known=
while IFS=: read -r name _; do
  if [ "$name" = "$user" ]; then known=1; fi
done </etc/passwd
if [ -z "$known" ]; then
  echo "testdbd: the image has no user $user: testdbd runs the server as $user, never as root" >&2; exit 1
fi
chown "$user" "$datadir"
chmod 0700 "$datadir"
mkdir -p ` + FilesDir + `
chmod 0555 ` + FilesDir + `
if [ ` + useSeed + ` = 1 ] && [ -d /testdbd/seed ]; then
  cp -a /testdbd/seed/. "$datadir"/
  chown -R "$user" "$datadir"
else
  ` + initialize + `
fi
if [ -n "${` + TLSCertEnv + `:-}" ] && [ -n "${` + TLSKeyEnv + `:-}" ]; then
  (umask 077; mkdir -p ` + TLSDir + `
   printf '%s\n' "$` + TLSCertEnv + `" >` + TLSDir + `/server-cert.pem
   printf '%s\n' "$` + TLSKeyEnv + `" >` + TLSDir + `/server-key.pem
   printf '%s\n' "$` + TLSCAEnv + `" >` + TLSDir + `/ca.pem)
  chown -R "$user" ` + TLSDir + `
  set -- --ssl-cert=` + TLSDir + `/server-cert.pem --ssl-key=` + TLSDir + `/server-key.pem --ssl-ca=` + TLSDir + `/ca.pem "$@"
elif [ -r /testdbd/tls/server-cert.pem ] && [ -r /testdbd/tls/server-key.pem ]; then
  mkdir -p ` + TLSDir + `
  cp /testdbd/tls/server-cert.pem /testdbd/tls/server-key.pem ` + TLSDir + `/
  chown -R "$user" ` + TLSDir + `
  chmod 0700 ` + TLSDir + `
  set -- --ssl-cert=` + TLSDir + `/server-cert.pem --ssl-key=` + TLSDir + `/server-key.pem "$@"
fi
unset ` + TLSCertEnv + ` ` + TLSKeyEnv + ` ` + TLSCAEnv + `
mkdir -p /run/testdbd
chown "$user" /run/testdbd
chmod 0700 /run/testdbd
(umask 077; printf '%s\n' "$TESTDBD_INIT_SQL" >` + InitFile + `)
chown "$user" ` + InitFile + `
unset TESTDBD_INIT_SQL
exec "$server" --no-defaults --user="$user" --datadir="$datadir" --tmpdir=` + TmpDir + ` --socket=/run/testdbd/mysqld.sock \
  --pid-file=/run/testdbd/mysqld.pid --init-file=` + InitFile + ` "$@"
`
}

// InitSQL creates testdbd's admin account, one statement per line as
// --init-file wants. MariaDB's root authenticates by Unix socket only;
// MySQL's root (created without a password) gets the admin password, and
// the admin has no SYSTEM_USER: objects it defines (a clone's routines and
// events) could otherwise be dropped or altered only by accounts that have
// it, which leases do not.
func InitSQL(flavor testdbd.Flavor, password string) string {
	stmts := []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s';", AdminUser, password),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%' WITH GRANT OPTION;", AdminUser),
	}
	if flavor == testdbd.MySQL {
		stmts = append(stmts,
			fmt.Sprintf("REVOKE SYSTEM_USER ON *.* FROM '%s'@'%%';", AdminUser),
			fmt.Sprintf("ALTER USER 'root'@'localhost' IDENTIFIED BY '%s';", password))
	}
	return strings.Join(stmts, "\n")
}

// VersionScript prints the server's version, trying MariaDB's binary name
// first (MariaDB images may also carry a mysqld link).
const VersionScript = `for b in mariadbd mysqld; do
  if command -v "$b" >/dev/null 2>&1; then exec "$b" --no-defaults --version; fi
done
echo "testdbd: neither mariadbd nor mysqld is in the image's PATH" >&2
exit 127`

// AdminPassword returns the admin password InitSQL put in initSQL (the
// content of InitFile), false when it holds none.
func AdminPassword(initSQL string) (string, bool) {
	prefix := fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '", AdminUser)
	for _, line := range strings.Split(initSQL, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if pw, ok := strings.CutSuffix(rest, "';"); ok && pw != "" {
				return pw, true
			}
		}
	}
	return "", false
}
