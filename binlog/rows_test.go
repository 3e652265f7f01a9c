package binlog_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/schema"
)

// TestRowsTake: the keys of every row a lease's statements changed, in
// every key shape a delta restore writes back (integers signed and
// unsigned, strings, several columns), and nothing of a rolled-back
// transaction; a statement that changes rows without logging them, a
// table without a key or with too many changed rows each say why; what
// another database's lease does changes nothing here; and a lease can
// neither keep its writes out of the log nor log them as statements.
func TestRowsTake(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.ServerOf(t, p)
			l, other := newLease(t, srv, "rows_a"), newLease(t, srv, "rows_b")
			if _, err := srv.DB.ExecContext(ctx, `CREATE TABLE rows_a.s (k VARCHAR(20) CHARACTER SET utf8mb4 PRIMARY KEY, v INT);
				CREATE TABLE rows_a.c (a TINYINT UNSIGNED, b BIGINT UNSIGNED, v INT, PRIMARY KEY (a, b));
				CREATE TABLE rows_a.n (x INT);
				INSERT INTO rows_a.s VALUES ('Ab', 1), ('ß', 2);
				INSERT INTO rows_a.n VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			s, err := schema.Capture(ctx, srv.DB, "rows_a", "")
			if err != nil {
				t.Fatal(err)
			}
			r := testenv.RowStream(t, srv)
			r.Track("rows_a", s.Tables)
			r.Track("rows_b", s.Tables)

			run(t, l, `INSERT INTO t VALUES (10, 10); UPDATE t SET id = 20 WHERE id = 1; DELETE FROM t WHERE id = 2;
				UPDATE s SET v = 5 WHERE k = 'ß'; INSERT INTO s VALUES ('x y', 3);
				INSERT INTO c VALUES (255, 18446744073709551615, 1), (1, 2, 3);
				START TRANSACTION; INSERT INTO t VALUES (99, 99); ROLLBACK`)
			run(t, other, "TRUNCATE TABLE t")
			c := r.Take(ctx, "rows_a", 5*time.Second)
			if c.Why != "" {
				t.Fatalf("why: %s", c.Why)
			}
			wantKeys(t, c, "t", "1", "10", "2", "20")
			wantKeys(t, c, "c", "(1,2)", "(255,18446744073709551615)")
			if !c.Tables["t"].Removed || c.Tables["c"].Removed {
				t.Errorf("removed: t %v, c %v; want true, false", c.Tables["t"].Removed, c.Tables["c"].Removed)
			}
			// The keys find their rows, in the column's own comparison.
			var n int
			if err := srv.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM rows_a.s WHERE k IN ("+strings.Join(c.Tables["s"].Keys, ",")+")").Scan(&n); err != nil || n != 2 {
				t.Errorf("rows of s found by %v: %d, %v; want 2", c.Tables["s"].Keys, n, err)
			}
			if err := srv.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM rows_a.c WHERE (a, b) IN ("+strings.Join(c.Tables["c"].Keys, ",")+")").Scan(&n); err != nil || n != 2 {
				t.Errorf("rows of c found by %v: %d, %v; want 2", c.Tables["c"].Keys, n, err)
			}

			// Taken: nothing since. Then a table without a key, too many rows.
			if c := r.Take(ctx, "rows_a", 5*time.Second); c.Why != "" || len(c.Tables) != 0 {
				t.Errorf("second take: %+v", c)
			}
			run(t, l, "INSERT INTO n VALUES (2); INSERT INTO t SELECT seq, seq FROM (SELECT 100 + a.id * 10 + b.id AS seq FROM t a, t b) x")
			run(t, l, "INSERT INTO t WITH RECURSIVE seq (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < 49) SELECT 1000 + a.n * 50 + b.n, 0 FROM seq a, seq b")
			c = r.Take(ctx, "rows_a", 5*time.Second)
			if why := c.Tables["n"].Why; !strings.Contains(why, "no primary key") {
				t.Errorf("n: %q", why)
			}
			if why := c.Tables["t"].Why; !strings.Contains(why, "more than 2000") {
				t.Errorf("t: %q", why)
			}

			// A lease cannot keep its writes out of the log, nor log them
			// as statements.
			for _, q := range []string{"SET SESSION sql_log_bin = 0", "SET SESSION binlog_format = 'STATEMENT'"} {
				if _, err := l.db.ExecContext(ctx, q); err == nil {
					t.Errorf("a lease ran %s", q)
				}
			}

			// A statement that changes rows unlogged: the database is unsure.
			run(t, l, "TRUNCATE TABLE s")
			if c := r.Take(ctx, "rows_a", 5*time.Second); !strings.Contains(c.Why, "TRUNCATE") {
				t.Errorf("after TRUNCATE: %+v", c)
			}
			if c := r.Take(ctx, "rows_b", 5*time.Second); !strings.Contains(c.Why, "TRUNCATE") {
				t.Errorf("rows_b after its TRUNCATE: %+v", c)
			}
		})
	}
}

func run(t *testing.T, l *lease, q string) {
	t.Helper()
	if _, err := l.db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func wantKeys(t *testing.T, c binlog.Changes, table string, want ...string) {
	t.Helper()
	tc := c.Tables[table]
	got := slices.Clone(tc.Keys)
	slices.Sort(got)
	if tc.Why != "" || !slices.Equal(got, want) {
		t.Errorf("%s: keys %v (why %q), want %v", table, got, tc.Why, want)
	}
}
