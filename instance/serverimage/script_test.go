package serverimage_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance/serverimage"
)

// TestStartScriptSyntax checks the start script of every flavor with the
// host's /bin/sh; the scripts run for real in the provider tests.
func TestStartScriptSyntax(t *testing.T) {
	for _, e := range []testdbd.Engine{{Flavor: testdbd.MariaDB, Version: "10.11.19"}, {Flavor: testdbd.MySQL, Version: "9.7.4"}} {
		flavor := e.Flavor
		for _, seed := range []bool{true, false} {
			script := serverimage.StartScript(e, seed)
			if out, err := exec.Command("/bin/sh", "-n", "-c", script).CombinedOutput(); err != nil {
				t.Errorf("%s seed=%v: %v: %s\n%s", flavor, seed, err, out, script)
			}
			for _, want := range []string{`"$@"`, "--init-file=", serverimage.Datadir, `--user="$user"`, "user=" + serverimage.ServerUser,
				"--ssl-cert=" + serverimage.TLSDir, "unset " + serverimage.TLSCertEnv + " " + serverimage.TLSKeyEnv + " " + serverimage.TLSCAEnv} {
				if !strings.Contains(script, want) {
					t.Errorf("%s seed=%v: the script lacks %s:\n%s", flavor, seed, want, script)
				}
			}
			if strings.Contains(script, "--user=root") {
				t.Errorf("%s seed=%v: the server would run as root:\n%s", flavor, seed, script)
			}
		}
	}
	if s := serverimage.StartScript(testdbd.Engine{Flavor: testdbd.MySQL, Version: "9.7.4"}, false); !strings.Contains(s, "--initialize-insecure") {
		t.Errorf("MySQL script does not initialize with --initialize-insecure:\n%s", s)
	}
	if s := serverimage.StartScript(testdbd.Engine{Flavor: testdbd.MariaDB, Version: "10.11.19"}, false); !strings.Contains(s, "mariadb-install-db") ||
		!strings.Contains(s, "--innodb-undo-tablespaces=3") {
		t.Errorf("MariaDB 10.11 script does not initialize with mariadb-install-db and its undo tablespaces:\n%s", s)
	}
	for name, script := range map[string]string{"version": serverimage.VersionScript, "renew TLS": serverimage.RenewTLSScript} {
		if out, err := exec.Command("/bin/sh", "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s script: %v: %s", name, err, out)
		}
	}
}

func TestInitSQL(t *testing.T) {
	for _, flavor := range []testdbd.Flavor{testdbd.MariaDB, testdbd.MySQL} {
		sql := serverimage.InitSQL(flavor, "0123abcd")
		for _, line := range strings.Split(sql, "\n") {
			if !strings.HasSuffix(line, ";") {
				t.Errorf("%s: --init-file wants one statement per line: %q", flavor, line)
			}
		}
		if !strings.Contains(sql, "WITH GRANT OPTION") || !strings.Contains(sql, "'0123abcd'") {
			t.Errorf("%s: %s", flavor, sql)
		}
		if got := strings.Contains(sql, "'root'@'localhost'"); got != (flavor == testdbd.MySQL) {
			t.Errorf("%s: root password set = %v: %s", flavor, got, sql)
		}
		if got := strings.Contains(sql, "REVOKE SYSTEM_USER"); got != (flavor == testdbd.MySQL) {
			t.Errorf("%s: SYSTEM_USER revoked = %v: %s", flavor, got, sql)
		}
		// The start script writes it with a newline at the end.
		if pw, ok := serverimage.AdminPassword(sql + "\n"); !ok || pw != "0123abcd" {
			t.Errorf("%s: AdminPassword = %q, %v", flavor, pw, ok)
		}
	}
	if pw, ok := serverimage.AdminPassword("CREATE USER 'other'@'%' IDENTIFIED BY 'x';\n"); ok {
		t.Errorf("AdminPassword of another account's statement = %q", pw)
	}
}

func TestArgs(t *testing.T) {
	maria := testdbd.Engine{Flavor: testdbd.MariaDB, Version: "10.11.14"}
	got := serverimage.Args(maria, 3306, "*", []string{"--max-connections=9"})
	want := []string{"--port=3306", "--bind-address=*", "--max-connections=9", "--secure-file-priv=" + serverimage.FilesDir, "--skip-symbolic-links"}
	if !slices.Equal(got, want) {
		t.Errorf("MariaDB args %q, want %q", got, want)
	}
	mysql := testdbd.Engine{Flavor: testdbd.MySQL, Version: "9.7.0"}
	if got := serverimage.Args(mysql, 3306, "127.0.0.1", nil); !slices.Contains(got, "--secure-file-priv=NULL") {
		t.Errorf("MySQL args %q lack --secure-file-priv=NULL", got)
	}
}
