package binlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestWritten: what two leases wrote to the binary log is counted for
// their databases, each its own, until Tidy purges it.
func TestWritten(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.ServerOf(t, p)
			var log binlog.Log
			a, b := newLease(t, srv, "w_a"), newLease(t, srv, "w_b")
			if _, err := a.db.Exec("CREATE TABLE big (id INT AUTO_INCREMENT PRIMARY KEY, pad LONGBLOB)"); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 40; i++ { // 40 rows of 100 KB: 4 MB
				if _, err := a.db.Exec("INSERT INTO big (pad) VALUES (REPEAT('x', 100000))"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := a.db.Exec("DELETE FROM big"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.Exec("UPDATE t SET v = v + 1"); err != nil {
				t.Fatal(err)
			}
			got, err := log.Written(ctx, srv.DB)
			if err != nil {
				t.Fatal(err)
			}
			if got["w_a"] < 40*100000 || got["w_a"] > 2*40*100000+1<<20 {
				t.Errorf("w_a wrote 4 MB of rows and deleted them; the log counts %d bytes for it", got["w_a"])
			}
			if got["w_b"] <= 0 || got["w_b"] > 4096 {
				t.Errorf("w_b updated three small rows; the log counts %d bytes for it", got["w_b"])
			}
			defer func(n int64) { binlog.TidyBytes = n }(binlog.TidyBytes)
			binlog.TidyBytes = 1
			if err := log.TidyNow(ctx, srv.DB); err != nil {
				t.Fatal(err)
			}
			// MariaDB keeps the last files until InnoDB has made their
			// transactions durable, a second or so: purge again until it
			// lets them go.
			for i := 0; i < 100; i++ {
				time.Sleep(100 * time.Millisecond)
				if got, err = log.Written(ctx, srv.DB); err != nil {
					t.Fatal(err)
				}
				if got["w_a"] == 0 {
					break
				}
				if err := log.TidyNow(ctx, srv.DB); err != nil {
					t.Fatal(err)
				}
			}
			if got["w_a"] != 0 || got["w_b"] != 0 {
				t.Errorf("after the purge the log counts %v", got)
			}
		})
	}
}
