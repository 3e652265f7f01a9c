package docker

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/testdbd/testdbd"
)

// TestStartScriptSyntax checks the start script of every flavor with the
// host's /bin/sh; only the MariaDB one runs in the tests (the MySQL images
// cannot be pulled here).
func TestStartScriptSyntax(t *testing.T) {
	for _, flavor := range []testdbd.Flavor{testdbd.MariaDB, testdbd.MySQL} {
		for _, seed := range []bool{true, false} {
			script := startScript(flavor, seed)
			if out, err := exec.Command("/bin/sh", "-n", "-c", script).CombinedOutput(); err != nil {
				t.Errorf("%s seed=%v: %v: %s\n%s", flavor, seed, err, out, script)
			}
			if !strings.Contains(script, `"$@"`) || !strings.Contains(script, "--init-file=") {
				t.Errorf("%s: the script does not pass the arguments and the init file:\n%s", flavor, script)
			}
		}
	}
	if s := startScript(testdbd.MySQL, false); !strings.Contains(s, "--initialize-insecure") {
		t.Errorf("MySQL script does not initialize with --initialize-insecure:\n%s", s)
	}
	if s := startScript(testdbd.MariaDB, false); !strings.Contains(s, "mariadb-install-db") {
		t.Errorf("MariaDB script does not initialize with mariadb-install-db:\n%s", s)
	}
}

func TestInitSQL(t *testing.T) {
	for _, flavor := range []testdbd.Flavor{testdbd.MariaDB, testdbd.MySQL} {
		sql := initSQL(flavor, "0123abcd")
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
	}
}
