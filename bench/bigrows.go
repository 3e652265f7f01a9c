package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/workload"
)

// The big-rows phase: a template shaped like a real application's (the
// standard schema plus two tables of about 16,000 seeded rows linked by a
// foreign key, and a table with a FULLTEXT index), and a test that adds one
// row to each of the two big tables, against one that adds one row to each
// of two small tables. A reset's cost should follow the rows the test
// changed, not the size of the tables it touched.
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
func bigRowsTest(small bool) func(ctx context.Context, db *sql.DB, rollback bool) error {
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
	return func(ctx context.Context, db *sql.DB, rollback bool) error {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if rollback {
			if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
				return err
			}
		}
		for _, s := range stmts {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		if rollback {
			_, err = conn.ExecContext(ctx, "ROLLBACK")
		}
		return err
	}
}

// bigRowsVariant names the variant of strategy v on the big or the small
// tables ("<strategy variant>@<tables>", as newLeaseVariant reads it).
func bigRowsVariant(v string, small bool) string {
	if small {
		return v + "@2 small tables"
	}
	return v + "@2 big tables"
}

func (b *bench) bigRowsPhase(ctx context.Context) error {
	b.progress("big tables: a daemon with a template of two %d-row tables and a FULLTEXT table", bigPayments)
	d, err := b.templateDaemon(ctx, "bigrows", bigRowsTemplate, b.plan.Tables, 6,
		client.MigrationFile{Name: "00003_big.sql", Content: bigRowsMigration()})
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	var vs []variant
	defer func() {
		for _, v := range vs {
			v.close()
		}
	}()
	for _, s := range strategyVariants {
		for _, small := range []bool{true, false} {
			v, err := newLeaseVariant(ctx, bigRowsVariant(s, small), d, bigRowsTemplate, "bigrows-"+strings.ReplaceAll(bigRowsVariant(s, small), " ", "-"))
			if err != nil {
				return err
			}
			v.work = bigRowsTest(small)
			vs = append(vs, v)
		}
	}
	samples, err := b.interleaveScale(ctx, vs, "big tables")
	b.res.BigRows = samples
	return err
}

// renderBigRows reports the big-rows phase.
func renderBigRows(w *strings.Builder, r *Results) {
	if len(r.BigRows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Big tables: a reset after adding rows to two 16,000-row tables\n\n")
	fmt.Fprintf(w, "A template of the %d-table standard schema plus `rental` (%d rows) and `payment` (%d rows, a foreign key to "+
		"`rental`) and `film_text` (1,000 rows, a FULLTEXT index), on a daemon of its own (6 worker databases). The test adds one "+
		"rental and its payment (\"2 big tables\"), or one row to each of two small tables of the standard schema (\"2 small tables\"); "+
		"the rollback variants do it inside a transaction they roll back. Interleaved in %d batches of %d per variant. Client-observed "+
		"milliseconds; delta is the tables the reset restored by deleting the added rows instead of copying the table back "+
		"(`tables_delta`), per reset.\n\n", r.Plan.Tables, bigRentals, bigPayments, r.Plan.ScaleBatches, r.Plan.ScalePerBatch)
	fmt.Fprintf(w, "| strategy | 2 small tables p50 | 2 big tables p50 | big over small (bar ≤ 3x) | big p99 | big: restore p50 | big: verify p50 | big: delta tables | big: resets that fell back |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range strategyVariants {
		sv, bv := bigRowsVariant(v, true), bigRowsVariant(v, false)
		s, big := resetSummary(r.BigRows, sv), resetSummary(r.BigRows, bv)
		phase := func(i int) float64 {
			return median(resetField(r.BigRows, bv, func(s ResetSample) float64 {
				if len(s.PhasesMs) > i {
					return s.PhasesMs[i]
				}
				return 0
			}))
		}
		delta := median(resetField(r.BigRows, bv, func(s ResetSample) float64 { return float64(s.Delta) }))
		fallbacks := 0
		for _, x := range r.BigRows {
			if x.Variant == bv && !x.Warmup && x.Fallback != "" {
				fallbacks++
			}
		}
		ratio := big.P50 / s.P50
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.0f | %d of %d |\n", v, fmtMs(s.P50), fmtMs(big.P50), fmtX(ratio),
			fmtMs(big.P99), fmtMs(phase(3)), fmtMs(phase(2)), delta, fallbacks, big.N)
	}
	fmt.Fprintf(w, "\nThe rollback strategy must tell a rolled-back change from a committed one, which the counters cannot: it reads "+
		"the tables' last commit (`UPDATE_TIME`, one query; the verify column) and checksums (`CHECKSUM TABLE`, which reads every row) "+
		"only tables committed to since the last reset, or in its second.\n\n")
}
