package workload

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/testdbd/testdbd/migrations"
)

// Seeded is the number of seeded tables; SeedRows the rows in each.
const (
	Seeded   = 10
	SeedRows = 100
)

// Numbers is a derived table of one column, n, holding 1 to 20,000 (seeding
// tables of thousands of rows without a recursive query): use it as
// "FROM " + Numbers + " seq WHERE n <= …".
const Numbers = `(
  SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 1 AS n
  FROM ` + digits + ` a, ` + digits + ` b, ` + digits + ` c, ` + digits + ` e,
       (SELECT 0 d UNION ALL SELECT 1) f
)`

const digits = "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
	"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"

// Table returns the name of table i.
func Table(i int) string { return fmt.Sprintf("t%04d", i) }

// Standard returns goose migrations for the standard schema with n tables
// (n ≥ 20): tables t0000..t(n-1). Tables 0–9 are seeded parents; every third
// table from 10 on has a foreign key to one of them, every sixth with ON
// DELETE CASCADE; t0010 has an AFTER INSERT trigger writing to t0011 and
// t0012 an AFTER UPDATE trigger writing to t0013; two views and a procedure
// that inserts into t0014.
func Standard(n int) migrations.Source {
	if n < 20 {
		n = 20
	}
	var tables, seed strings.Builder
	tables.WriteString("-- +goose Up\n")
	for i := 0; i < n; i++ {
		fk := ""
		if i >= Seeded && i%3 == 1 {
			action := "RESTRICT"
			if i%6 == 1 {
				action = "CASCADE"
			}
			fk = fmt.Sprintf(",\n  KEY parent_id (parent_id),\n  CONSTRAINT %s_fk FOREIGN KEY (parent_id) REFERENCES %s (id) ON DELETE %s",
				Table(i), Table(i%Seeded), action)
		}
		fmt.Fprintf(&tables, `CREATE TABLE %s (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  parent_id BIGINT NULL,
  name VARCHAR(64) NOT NULL DEFAULT '',
  amount INT NOT NULL DEFAULT 0,
  created_at DATETIME NOT NULL DEFAULT '2024-01-01 00:00:00',
  KEY name (name)%s
) ENGINE=InnoDB;
`, Table(i), fk)
	}
	tables.WriteString("-- +goose Down\n")
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&tables, "DROP TABLE %s;\n", Table(i))
	}

	objects := fmt.Sprintf(`-- +goose Up
CREATE VIEW v_parents AS SELECT id, name, amount FROM %[1]s;
CREATE VIEW v_rich_parents AS SELECT id, name FROM v_parents WHERE amount > 50;
-- +goose StatementBegin
CREATE TRIGGER %[2]s_ai AFTER INSERT ON %[2]s FOR EACH ROW
BEGIN
  INSERT INTO %[3]s (name, amount) VALUES (CONCAT('audit ', NEW.id), NEW.amount);
END
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER %[4]s_au AFTER UPDATE ON %[4]s FOR EACH ROW
BEGIN
  INSERT INTO %[5]s (name, amount) VALUES (CONCAT('changed ', NEW.id), NEW.amount - OLD.amount);
END
-- +goose StatementEnd
-- +goose StatementBegin
CREATE PROCEDURE add_row(IN p_name VARCHAR(64), IN p_amount INT)
BEGIN
  INSERT INTO %[6]s (name, amount) VALUES (p_name, p_amount);
END
-- +goose StatementEnd
-- +goose Down
DROP PROCEDURE add_row;
DROP TRIGGER %[4]s_au;
DROP TRIGGER %[2]s_ai;
DROP VIEW v_rich_parents;
DROP VIEW v_parents;
`, Table(0), Table(10), Table(11), Table(12), Table(13), Table(14))

	for i := 0; i < Seeded; i++ {
		fmt.Fprintf(&seed, "INSERT INTO %s (name, amount) VALUES ", Table(i))
		for r := 1; r <= SeedRows; r++ {
			if r > 1 {
				seed.WriteString(", ")
			}
			fmt.Fprintf(&seed, "('seed %d', %d)", r, r)
		}
		seed.WriteString(";\n")
	}
	return migrations.Source{
		Files: []migrations.File{
			{Name: "00001_tables.sql", Content: []byte(tables.String())},
			{Name: "00002_objects.sql", Content: []byte(objects)},
		},
		Seed: seed.String(),
	}
}

// Dirty lists the tables Test writes to: 5 of them, one seeded.
var Dirty = []string{Table(2), Table(15), Table(16), Table(17), Table(18)}

// Test runs the standard test against a worker database: inserts rows into
// 5 tables, one of them seeded, and updates seeded rows, so exactly the 5
// tables of Dirty change. db must be connected to the worker database.
func Test(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}) error {
	stmts := []string{
		fmt.Sprintf("INSERT INTO %s (name, amount) VALUES ('a', 1), ('b', 2)", Table(2)),
		fmt.Sprintf("INSERT INTO %s (name) VALUES ('c')", Table(15)),
		fmt.Sprintf("INSERT INTO %s (parent_id, name) VALUES (1, 'd')", Table(16)),
		fmt.Sprintf("INSERT INTO %s (name) VALUES ('e')", Table(17)),
		fmt.Sprintf("INSERT INTO %s (name) VALUES ('f'), ('g')", Table(18)),
		fmt.Sprintf("UPDATE %s SET amount = amount + 1 WHERE id <= 3", Table(2)),
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// History returns n goose migrations as a long-lived project accumulates
// them: tables with indexes and rows, columns added to them later, a view
// now and then. Files are named 00001_step.sql … in order.
func History(n int) migrations.Source {
	src := migrations.Source{Files: make([]migrations.File, 0, n)}
	for i := 1; i <= n; i++ {
		var b strings.Builder
		b.WriteString("-- +goose Up\n")
		switch i % 3 {
		case 1:
			fmt.Fprintf(&b, "CREATE TABLE t%d (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40) NOT NULL, created DATETIME(6), KEY (name));\n", i)
			fmt.Fprintf(&b, "INSERT INTO t%d (name, created) VALUES ('a%d', '2024-01-02 03:04:05.123456'), ('b%d', NULL);\n", i, i, i)
		case 2:
			fmt.Fprintf(&b, "ALTER TABLE t%d ADD COLUMN score DOUBLE DEFAULT %d.5, ADD COLUMN blob_ VARBINARY(16);\n", i-1, i)
			fmt.Fprintf(&b, "UPDATE t%d SET blob_ = UNHEX('00ff10');\n", i-1)
		default:
			fmt.Fprintf(&b, "CREATE VIEW v%d AS SELECT id, name FROM t%d;\n", i, i-2)
		}
		src.Files = append(src.Files, migrations.File{Name: fmt.Sprintf("%05d_step.sql", i), Content: []byte(b.String())})
	}
	return src
}
