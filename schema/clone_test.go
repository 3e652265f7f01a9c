package schema_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/schema"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// plainExec runs a batch as it is.
type plainExec struct{}

func (plainExec) Exec(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, _ int, q string) error {
	_, err := db.ExecContext(ctx, q)
	return err
}

// TestCloneEqualsTemplate clones a template whose objects were created the
// way tools that send multi-statement batches create them (single-statement
// bodies followed by more statements) and, on MySQL, with a functional
// index over a NOT NULL column, and checks that the clone's captured
// definition and table checksums equal the template's on every engine.
func TestCloneEqualsTemplate(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			conn, err := srv.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			batch := `CREATE DATABASE tpl_c; USE tpl_c;
CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL DEFAULT 0);
CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(20) NOT NULL);
INSERT INTO t (v) VALUES (1), (2), (3);
CREATE EVENT purge_audit ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' DO DELETE FROM audit WHERE what = 'tmp';
CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.v = NEW.v + 1;
CREATE PROCEDURE p1() SELECT COUNT(*) FROM t;
CREATE FUNCTION f1() RETURNS INT DETERMINISTIC RETURN 1;
CREATE VIEW tv AS SELECT id, v FROM t;`
			if srv.Flavor == testdbd.MySQL {
				batch += `
CREATE TABLE fi (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL, KEY f ((LOWER(name))));
INSERT INTO fi VALUES (1, 'Ann'), (2, 'Bob');`
			}
			t.Cleanup(func() { _, _ = srv.DB.Exec("DROP DATABASE IF EXISTS tpl_c; DROP DATABASE IF EXISTS w_c") })
			if _, err := conn.ExecContext(ctx, batch); err != nil {
				t.Fatalf("template: %v", err)
			}
			tpl, err := schema.Capture(ctx, srv.DB, "tpl_c", "")
			if err != nil {
				t.Fatalf("capture the template: %v", err)
			}
			if err := tpl.Clone(ctx, srv.DB, plainExec{}, "w_c", ""); err != nil {
				t.Fatal(err)
			}
			clone, err := schema.Capture(ctx, srv.DB, "w_c", "")
			if err != nil {
				t.Fatalf("capture the clone: %v", err)
			}
			if d := schema.Diff(tpl, clone); len(d) > 0 {
				for _, o := range append(tpl.Objects(), clone.Objects()...) {
					t.Logf("%s %s: %q", o.Kind, o.Name, o.Create)
				}
				t.Errorf("clone differs from its template: %v", d)
			}
			for _, tt := range tpl.Tables {
				c, ok := clone.Table(tt.Name)
				if !ok {
					t.Errorf("table %s missing from the clone", tt.Name)
					continue
				}
				if c.Checksum != tt.Checksum || c.Rows != tt.Rows {
					t.Errorf("table %s: template checksum %d (%d rows), clone %d (%d rows)", tt.Name, tt.Checksum, tt.Rows, c.Checksum, c.Rows)
				}
			}
		})
	}
}
