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

func TestArgsPerFlavor(t *testing.T) {
	for _, flavor := range []testdbd.Flavor{testdbd.MariaDB, testdbd.MySQL} {
		args := strings.Join(Args(flavor, Config{}), " ")
		for _, want := range []string{"--skip-log-bin", "--innodb-stats-auto-recalc=OFF", "--innodb-flush-log-at-trx-commit=0"} {
			if !strings.Contains(args, want) {
				t.Errorf("%s: %s missing from %s", flavor, want, args)
			}
		}
	}
	if a := strings.Join(Args(testdbd.MariaDB, Config{}), " "); !strings.Contains(a, "--innodb-log-file-size=") {
		t.Errorf("mariadb: no redo log size in %s", a)
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
