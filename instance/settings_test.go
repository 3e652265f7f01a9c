package instance

import (
	"strings"
	"testing"

	"github.com/testdbd/testdbd"
)

func TestSameValue(t *testing.T) {
	cases := []struct {
		name, want, got string
		same            bool
	}{
		{"log_bin", "OFF", "0", true},
		{"innodb_doublewrite", "OFF", "OFF", true},
		{"skip_name_resolve", "ON", "1", true},
		{"performance_schema", "OFF", "ON", false},
		{"innodb_flush_method", "fsync", "FSYNC", true},
		{"innodb_flush_method", "fsync", "O_DIRECT", false},
		{"max_connections", "512", "512", true},
		{"max_connections", "512", "214", false},
		{"open_files_limit", "40712", "40712", true},
		{"open_files_limit", "40712", "65535", true}, // the server may raise it
		{"open_files_limit", "40712", "20000", false},
		{"open_files_limit", "40712", "NULL", false},
	}
	for _, c := range cases {
		if got := sameValue(c.name, c.want, c.got); got != c.same {
			t.Errorf("sameValue(%s, %q, %q) = %v, want %v", c.name, c.want, c.got, got, c.same)
		}
	}
}

var (
	mariadb1011 = testdbd.Engine{Flavor: testdbd.MariaDB, Version: "10.11.19"}
	mariadb118  = testdbd.Engine{Flavor: testdbd.MariaDB, Version: "11.8.9"}
	mysql97     = testdbd.Engine{Flavor: testdbd.MySQL, Version: "9.7.4"}
)

func TestArgsPerEngine(t *testing.T) {
	for _, e := range []testdbd.Engine{mariadb1011, mariadb118, mysql97} {
		args := strings.Join(Args(e, Config{}), " ")
		for _, want := range []string{"--log-bin=testdbd-bin", "--binlog-row-image=MINIMAL", "--innodb-stats-auto-recalc=OFF", "--innodb-flush-log-at-trx-commit=0"} {
			if !strings.Contains(args, want) {
				t.Errorf("%s: %s missing from %s", e, want, args)
			}
		}
		// The hardening is the provider's (Hardening), after the settings.
		if strings.Contains(args, "secure-file-priv") || strings.Contains(args, "symbolic-links") {
			t.Errorf("%s: hardening among the settings: %s", e, args)
		}
	}
	cases := []struct {
		e          testdbd.Engine
		has, hasnt []string
	}{
		{mariadb1011, []string{"--innodb-log-file-size=", "--innodb-flush-method=fsync", "--innodb-file-per-table=ON",
			"--binlog-format=ROW", "--binlog-annotate-row-events=OFF"},
			[]string{"buffering", "mysqlx", "gtid"}},
		// 11.0 deprecated innodb_file_per_table and innodb_flush_method.
		{mariadb118, []string{"--innodb-log-file-size=", "--innodb-data-file-buffering=ON", "--innodb-log-file-buffering=ON"},
			[]string{"--innodb-flush-method", "--innodb-file-per-table"}},
		{mysql97, []string{"--innodb-redo-log-capacity=8388608", "--mysqlx=OFF", "--innodb-numa-interleave=OFF",
			"--table-open-cache-instances=1", "--information-schema-stats-expiry=0", "--gtid-mode=OFF", "--enforce-gtid-consistency=OFF"},
			[]string{"--innodb-log-file-size", "aria", "binlog-format", "annotate"}},
	}
	for _, c := range cases {
		args := strings.Join(Args(c.e, Config{}), " ")
		for _, w := range c.has {
			if !strings.Contains(args, w) {
				t.Errorf("%s: %s missing from %s", c.e, w, args)
			}
		}
		for _, w := range c.hasnt {
			if strings.Contains(args, w) {
				t.Errorf("%s: %s in %s", c.e, w, args)
			}
		}
	}
}

func TestHardening(t *testing.T) {
	if got := strings.Join(Hardening(mysql97, "/x/files"), " "); got != "--secure-file-priv=NULL" {
		t.Errorf("mysql: %s", got)
	}
	for _, e := range []testdbd.Engine{mariadb1011, mariadb118} {
		if got := strings.Join(Hardening(e, "/x/files"), " "); got != "--secure-file-priv=/x/files --skip-symbolic-links" {
			t.Errorf("%s: %s", e, got)
		}
	}
	// Read back: MySQL's NULL, MariaDB's a directory.
	for _, e := range []testdbd.Engine{mariadb1011, mysql97} {
		for _, s := range settings(e, Config{}) {
			if s.variable != "secure_file_priv" {
				continue
			}
			ok := func(got string) bool {
				if s.match != nil {
					return s.match(got)
				}
				return sameValue(s.variable, s.want, got)
			}
			if e.Flavor == testdbd.MySQL && (!ok("NULL") || ok("/var/lib/mysql-files/")) {
				t.Errorf("mysql secure_file_priv check wrong")
			}
			if e.Flavor == testdbd.MariaDB && (ok("NULL") || ok("") || !ok("/run/testdbd/x/files/")) {
				t.Errorf("mariadb secure_file_priv check wrong")
			}
		}
	}
}

func TestAtLeast(t *testing.T) {
	cases := []struct {
		v            string
		major, minor int
		want         bool
	}{
		{"10.11.19", 11, 0, false}, {"11.0.1", 11, 0, true}, {"11.8.9", 11, 0, true},
		{"9.7.4", 8, 0, true}, {"8.0.36", 8, 4, false}, {"x", 1, 0, false},
	}
	for _, c := range cases {
		if got := atLeast(testdbd.Engine{Version: c.v}, c.major, c.minor); got != c.want {
			t.Errorf("atLeast(%s, %d.%d) = %v", c.v, c.major, c.minor, got)
		}
	}
}

func TestTableCacheFitsOpenFiles(t *testing.T) {
	c := Config{MaxConnections: 100, TableCache: 1 << 30}.withDefaults()
	if c.openFiles() <= 0 || c.TableCache <= 0 {
		t.Fatalf("config %+v", c)
	}
	if c.TableCache == 1<<30 {
		t.Skip("no open-file limit on this machine: the cache is not shrunk")
	}
}

// TestSpaceSettings: every engine rotates and bounds its binary log and
// truncates its undo logs; MariaDB's datadirs are initialized with the
// undo tablespaces its servers are started with.
func TestSpaceSettings(t *testing.T) {
	for _, e := range []testdbd.Engine{mariadb1011, mariadb118, mysql97} {
		args := strings.Join(Args(e, Config{}), " ")
		for _, want := range []string{"--max-binlog-size=4194304", "--max-binlog-cache-size=134217728",
			"--max-binlog-stmt-cache-size=134217728", "--innodb-max-undo-log-size="} {
			if !strings.Contains(args, want) {
				t.Errorf("%s: %s missing from %s", e, want, args)
			}
		}
		init := strings.Join(InitArgs(e), " ")
		if e.Flavor == testdbd.MariaDB {
			if !strings.Contains(args, "--innodb-undo-tablespaces=3 --innodb-undo-log-truncate=ON") || init != "--innodb-undo-tablespaces=3" {
				t.Errorf("%s: undo tablespaces not asked for at start (%s) or at initialization (%q)", e, args, init)
			}
		} else if init != "" || strings.Contains(args, "undo-tablespaces") {
			t.Errorf("%s: asks for undo tablespaces (MySQL has two): %s; %q", e, args, init)
		}
	}
	old := testdbd.Engine{Flavor: testdbd.MariaDB, Version: "10.6.18"}
	if InitArgs(old) != nil || strings.Contains(strings.Join(Args(old, Config{}), " "), "undo") {
		t.Errorf("MariaDB 10.6 is asked for undo tablespaces it cannot get")
	}
}
