package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/workload"
)

// The big-tables phase: a template shaped like a real application's (the
// standard schema plus two tables of about 16,000 seeded rows linked by a
// foreign key, and a table with a FULLTEXT index), and a test that adds one
// row to each of the two big tables, against one that adds one row to each
// of two small tables. A reset's cost should follow the rows the test
// changed, not the size of the tables it touched.
var bigTablesPhase = &Phase[bigTablesPlan, bigTablesResults]{
	Name:   "big-tables",
	Full:   bigTablesPlan{Batches: 10, Warmup: 2, PerBatch: 10},
	Quick:  bigTablesPlan{Batches: 2, Warmup: 1, PerBatch: 3},
	Run:    runBigTables,
	Report: reportBigTables,
}

type bigTablesPlan struct {
	// Batches batches of Warmup untimed and PerBatch timed samples per
	// variant, interleaved.
	Batches  int `json:"batches"`
	Warmup   int `json:"warmup"`
	PerBatch int `json:"per_batch"`
}

type bigTablesResults struct {
	// Resets are "<strategy>/small" and "<strategy>/big".
	Resets []Series `json:"resets"`
}

const (
	bigRowsTemplate = "bigrows"
	bigRentals      = 16044
	bigPayments     = 16049
)

// bigRowsMigration creates the big tables and the FULLTEXT one, with their
// rows.
func bigRowsMigration() string {
	return fmt.Sprintf(`-- +goose Up
CREATE TABLE rental (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  item VARCHAR(40) NOT NULL,
  rented_at DATETIME NOT NULL DEFAULT '2024-01-01 00:00:00',
  KEY by_customer (customer_id)
) ENGINE=InnoDB;
CREATE TABLE payment (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  rental_id INT NULL,
  amount DECIMAL(6,2) NOT NULL,
  paid_at DATETIME NOT NULL DEFAULT '2024-01-01 00:00:00',
  KEY by_rental (rental_id),
  CONSTRAINT payment_rental FOREIGN KEY (rental_id) REFERENCES rental (id)
) ENGINE=InnoDB;
CREATE TABLE film_text (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  title VARCHAR(200) NOT NULL,
  body TEXT NOT NULL,
  FULLTEXT KEY ft_film (title, body)
) ENGINE=InnoDB;
INSERT INTO rental (customer_id, item) SELECT n %% 599, CONCAT('item ', n) FROM %[1]s s WHERE n <= %[2]d ORDER BY n;
INSERT INTO payment (rental_id, amount) SELECT IF(n <= %[2]d, n, NULL), (n %% 1000) / 100 FROM %[1]s s WHERE n <= %[3]d ORDER BY n;
INSERT INTO film_text (title, body) SELECT CONCAT('film ', n), CONCAT('a story of ', n %% 17, ' databases and ', n %% 5, ' resets') FROM %[1]s s WHERE n <= 1000 ORDER BY n;
-- +goose Down
DROP TABLE film_text;
DROP TABLE payment;
DROP TABLE rental;
`, workload.Numbers, bigRentals, bigPayments)
}

// bigRowsTest adds one row to each of the two big tables (a rental and its
// payment) or, with small, to each of two small tables of the standard
// schema; inside a transaction it rolls back when rollback is set.
func bigRowsTest(small bool) testFunc {
	stmts := []string{
		"INSERT INTO rental (customer_id, item) VALUES (1, 'new')",
		"INSERT INTO payment (rental_id, amount) VALUES (LAST_INSERT_ID(), 4.99)",
	}
	if small {
		stmts = []string{
			fmt.Sprintf("INSERT INTO %s (name) VALUES ('new')", workload.Table(15)),
			fmt.Sprintf("INSERT INTO %s (name) VALUES ('new')", workload.Table(17)),
		}
	}
	return func(ctx context.Context, conn *sql.Conn, rollback bool) error {
		return execAll(ctx, conn, stmts, rollback)
	}
}

// execAll runs stmts on conn, inside a transaction it rolls back when
// rollback is set.
func execAll(ctx context.Context, conn *sql.Conn, stmts []string, rollback bool) error {
	if rollback {
		stmts = append(append([]string{"BEGIN"}, stmts...), "ROLLBACK")
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func runBigTables(ctx context.Context, b *bench, p bigTablesPlan, r *bigTablesResults) error {
	pool := 2 * len(strategies)
	d, err := b.templateDaemon(ctx, "big-tables", nil, bigRowsTemplate, pool,
		client.MigrationFile{Name: "00003_big.sql", Content: bigRowsMigration()})
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	var vs []variant
	defer func() { closeAll(vs) }()
	for _, s := range strategies {
		for _, size := range []string{"small", "big"} {
			v, err := newLeaseVariant(ctx, s+"/"+size, d, bigRowsTemplate, s, "big-tables-"+s+"-"+size, false)
			if err != nil {
				return err
			}
			v.work = bigRowsTest(size == "small")
			vs = append(vs, v)
		}
	}
	r.Resets, err = interleave(ctx, vs, uniform(p.Batches, p.Warmup, p.PerBatch),
		func(batch int) { b.progress("big tables: batch %d/%d", batch+1, p.Batches) })
	return err
}

func reportBigTables(rep *report, p bigTablesPlan, r *bigTablesResults) {
	rep.section("Big tables", fmt.Sprintf("A template of the standard schema plus `rental` (%s rows) and `payment` (%s rows, "+
		"a foreign key to `rental`) and `film_text` (1,000 rows, a FULLTEXT index). The test adds one rental and its payment "+
		"(big tables), or one row to each of two small tables of the standard schema (small tables); the rollback "+
		"strategy's test does it in a transaction it rolls back. %s of %d per variant, interleaved.",
		fmtInt(bigRentals), fmtInt(bigPayments), count(p.Batches, "batch"), p.PerBatch))
	var rows [][]string
	for _, s := range strategies {
		small, big := summarize(seriesOf(r.Resets, s+"/small")), summarize(seriesOf(r.Resets, s+"/big"))
		if big.N > 0 {
			rows = append(rows, []string{s, p50p99(small), p50p99(big), fmtX(big.P50 / small.P50)})
		}
	}
	rep.table([]string{"strategy", "2 small tables: p50 / p99 ms", "2 big tables: p50 / p99 ms", "big / small (p50)"}, rows)
	ratio := func(s string) string {
		return fmtX(median(seriesOf(r.Resets, s+"/big")) / median(seriesOf(r.Resets, s+"/small")))
	}
	if len(rows) > 0 {
		rep.bullet("A reset after adding a row to each of two %s-row tables takes p50 %s ms with snapshot, %s the same change "+
			"to two small tables (truncate %s, rollback %s).", fmtInt(bigPayments), fmtMs(median(seriesOf(r.Resets, "snapshot/big"))),
			ratio("snapshot"), ratio("truncate"), ratio("rollback"))
	}
}
