package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
)

// The real-schema phase: an application's schema — customers, orders,
// payments, an audit log and lookup tables, with foreign keys — seeded
// big (orders, payments and the audit log 100,000 rows each, customers
// 10,000) or small (100 rows each), and a test that changes about 30 rows
// across them (places an order, updates ten, deletes five payments,
// renames a customer, logs ten events). testdbd's strategies on both
// sizes, beside Laravel's DatabaseTruncation (every table truncated and
// the seed run again) on the big one, on each engine present.
var realSchemaPhase = &Phase[realSchemaPlan, realSchemaResults]{
	Name:   "real-schema",
	Full:   realSchemaPlan{Engines: append([]EngineImage{nativeEngine}, dockerEngines...), Batches: 6, Warmup: 2, PerBatch: 8},
	Quick:  realSchemaPlan{Engines: []EngineImage{nativeEngine}, Batches: 1, Warmup: 1, PerBatch: 3},
	Run:    runRealSchema,
	Report: reportRealSchema,
}

type realSchemaPlan struct {
	Engines  []EngineImage `json:"engines"`
	Batches  int           `json:"batches"`
	Warmup   int           `json:"warmup"`
	PerBatch int           `json:"per_batch"`
}

type realSchemaResults struct {
	Engines []engineRun `json:"engines"` // Resets: "<strategy>/big", "<strategy>/small", "laravel/big"
}

// nativeEngine is the daemon's own server (no image).
var nativeEngine = EngineImage{ID: "native", Image: "", Target: ""}

const (
	realBig   = 100000
	realSmall = 100
)

// realSchemaSource is the application's schema, seeded with rows orders,
// payments and audit log entries (and a tenth as many customers).
func realSchemaSource(rows int) migrations.Source {
	schema := `-- +goose Up
CREATE TABLE countries (
  id SMALLINT NOT NULL PRIMARY KEY,
  code CHAR(2) NOT NULL UNIQUE,
  name VARCHAR(40) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE order_statuses (
  id TINYINT NOT NULL PRIMARY KEY,
  name VARCHAR(20) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE customers (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  email VARCHAR(80) NOT NULL UNIQUE,
  name VARCHAR(60) NOT NULL,
  country_id SMALLINT NOT NULL,
  created_at DATETIME NOT NULL DEFAULT '2024-01-01 00:00:00',
  CONSTRAINT customer_country FOREIGN KEY (country_id) REFERENCES countries (id)
) ENGINE=InnoDB;
CREATE TABLE orders (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id INT NOT NULL,
  status_id TINYINT NOT NULL,
  total DECIMAL(10,2) NOT NULL,
  placed_at DATETIME NOT NULL DEFAULT '2024-01-01 00:00:00',
  KEY by_customer (customer_id),
  CONSTRAINT order_customer FOREIGN KEY (customer_id) REFERENCES customers (id),
  CONSTRAINT order_status FOREIGN KEY (status_id) REFERENCES order_statuses (id)
) ENGINE=InnoDB;
CREATE TABLE payments (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id BIGINT NOT NULL,
  amount DECIMAL(10,2) NOT NULL,
  method ENUM('card','bank','cash') NOT NULL,
  paid_at DATETIME NOT NULL DEFAULT '2024-01-02 00:00:00',
  KEY by_order (order_id),
  CONSTRAINT payment_order FOREIGN KEY (order_id) REFERENCES orders (id)
) ENGINE=InnoDB;
CREATE TABLE audit_log (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  entity VARCHAR(20) NOT NULL,
  entity_id BIGINT NOT NULL,
  action VARCHAR(10) NOT NULL,
  at DATETIME NOT NULL DEFAULT '2024-01-03 00:00:00',
  KEY by_entity (entity, entity_id)
) ENGINE=InnoDB;
-- +goose Down
DROP TABLE audit_log;
DROP TABLE payments;
DROP TABLE orders;
DROP TABLE customers;
DROP TABLE order_statuses;
DROP TABLE countries;
`
	// Up to 100,000 rows from the 20,000 of workload.Numbers.
	upTo := func(n int) string {
		return fmt.Sprintf("(SELECT n + 20000 * k AS m FROM %s seq, (SELECT 0 k UNION ALL SELECT 1 UNION ALL SELECT 2 "+
			"UNION ALL SELECT 3 UNION ALL SELECT 4) ks) x WHERE m <= %d ORDER BY m", workload.Numbers, n)
	}
	customers := max(rows/10, 10)
	seed := []string{
		fmt.Sprintf("INSERT INTO countries SELECT m, CONCAT(CHAR(65 + m DIV 26), CHAR(65 + m %% 26)), CONCAT('country ', m) FROM %s", upTo(100)),
		"INSERT INTO order_statuses VALUES (1, 'new'), (2, 'paid'), (3, 'shipped'), (4, 'cancelled')",
		fmt.Sprintf("INSERT INTO customers (id, email, name, country_id) SELECT m, CONCAT('c', m, '@example.com'), CONCAT('customer ', m), 1 + m %% 100 FROM %s", upTo(customers)),
		fmt.Sprintf("INSERT INTO orders (id, customer_id, status_id, total) SELECT m, 1 + m %% %d, 1 + m %% 4, (m %% 1000) / 10 FROM %s", customers, upTo(rows)),
		fmt.Sprintf("INSERT INTO payments (id, order_id, amount, method) SELECT m, m, (m %% 1000) / 10, ELT(1 + m %% 3, 'card', 'bank', 'cash') FROM %s", upTo(rows)),
		fmt.Sprintf("INSERT INTO audit_log (id, entity, entity_id, action) SELECT m, 'order', m, 'created' FROM %s", upTo(rows)),
	}
	return migrations.Source{Files: []migrations.File{{Name: "00001_app.sql", Content: []byte(schema)}}, Seed: strings.Join(seed, ";\n") + ";\n"}
}

// realSchemaTest changes about 30 rows of a database of realSchemaSource
// seeded with rows: an order placed with its payment and two log entries,
// ten orders' status, five payments deleted, a customer renamed and ten
// more log entries; inside a transaction it rolls back when rollback is
// set.
func realSchemaTest(rows int, rng *rand.Rand) testFunc {
	return func(ctx context.Context, conn *sql.Conn, rollback bool) error {
		some := func(k int) string {
			ids := make([]string, k)
			for i := range ids {
				ids[i] = fmt.Sprint(1 + rng.IntN(rows))
			}
			return strings.Join(ids, ",")
		}
		customer := 1 + rng.IntN(max(rows/10, 10))
		var logRows []string
		for range 10 {
			logRows = append(logRows, fmt.Sprintf("('order', %d, 'viewed')", 1+rng.IntN(rows)))
		}
		stmts := []string{
			fmt.Sprintf("INSERT INTO orders (customer_id, status_id, total) VALUES (%d, 1, 19.90)", customer),
			"INSERT INTO payments (order_id, amount, method) VALUES (LAST_INSERT_ID(), 19.90, 'card')",
			"INSERT INTO audit_log (entity, entity_id, action) VALUES ('order', LAST_INSERT_ID(), 'created'), ('payment', 0, 'created')",
			"UPDATE orders SET status_id = 3 WHERE id IN (" + some(10) + ")",
			"DELETE FROM payments WHERE id IN (" + some(5) + ")",
			fmt.Sprintf("UPDATE customers SET name = 'renamed' WHERE id = %d", customer),
			"INSERT INTO audit_log (entity, entity_id, action) VALUES " + strings.Join(logRows, ", "),
		}
		return execAll(ctx, conn, stmts, rollback)
	}
}

func runRealSchema(ctx context.Context, b *bench, p realSchemaPlan, r *realSchemaResults) error {
	engines := p.Engines
	if b.engines != nil {
		engines = append([]EngineImage{nativeEngine}, b.engines...)
	}
	for _, e := range engines {
		run := engineRun{ID: e.ID, Image: e.Image}
		if e.Image != "" {
			run.Skipped = imageMissing(ctx, e)
		}
		if run.Skipped != "" {
			b.progress("real schema: %s skipped: %s", e.ID, run.Skipped)
			r.Engines = append(r.Engines, run)
			continue
		}
		err := b.realSchemaRun(ctx, p, e, &run)
		r.Engines = append(r.Engines, run)
		if err != nil {
			return fmt.Errorf("%s: %w", e.ID, err)
		}
	}
	return nil
}

func (b *bench) realSchemaRun(ctx context.Context, p realSchemaPlan, e EngineImage, run *engineRun) error {
	var args []string
	if e.Image != "" {
		args = []string{"--provider", "docker", "--image", e.Image}
	}
	// Per size: a lease per strategy; on the big one, Laravel's too.
	pool := 2*len(strategies) + 1
	d, err := b.sourceDaemon(ctx, "real schema "+e.ID, args, "appbig", len(strategies)+1, realSchemaSource(realBig), pool)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	if err := d.ensureSource(ctx, "appsmall", len(strategies), realSchemaSource(realSmall)); err != nil {
		return err
	}
	if err := d.waitIdle(ctx, "appsmall", len(strategies)); err != nil {
		return err
	}
	if insts, err := d.api.ListInstances(ctx); err == nil && len(insts) > 0 {
		run.Version = insts[0].Version
	}
	var vs []variant
	defer func() { closeAll(vs) }()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []string{"big", "small"} {
		rows, template := realBig, "appbig"
		if size == "small" {
			rows, template = realSmall, "appsmall"
		}
		for _, s := range strategies {
			v, err := newLeaseVariant(ctx, s+"/"+size, d, template, s, "real-"+s+"-"+size, false)
			if err != nil {
				return err
			}
			v.work = realSchemaTest(rows, rng)
			vs = append(vs, v)
		}
	}
	lv, err := newLeaseLaravelVariant(ctx, "laravel/big", d, "appbig", "real-laravel", realSchemaSource(realBig))
	if err != nil {
		return err
	}
	lv.work = realSchemaTest(realBig, rng)
	vs = append(vs, lv)
	run.Resets, err = interleave(ctx, vs, uniform(p.Batches, p.Warmup, p.PerBatch),
		func(batch int) { b.progress("real schema %s: batch %d/%d", e.ID, batch+1, p.Batches) })
	return err
}

func reportRealSchema(rep *report, p realSchemaPlan, r *realSchemaResults) {
	rep.section("Real schema", fmt.Sprintf("An application's schema: `customers` (%s rows), `orders`, `payments` and `audit_log` "+
		"(%s rows each), with foreign keys, and two lookup tables; or the same with 100 rows each (small). The test places an "+
		"order with its payment, updates ten orders, deletes five payments, renames a customer and logs twelve events: "+
		"about 30 rows (the rollback strategy's test does it in a transaction it rolls back). Laravel's DatabaseTruncation "+
		"truncates every table and runs the seed again. %s of %d per variant, interleaved, on each engine.",
		fmtInt(realBig/10), fmtInt(realBig), count(p.Batches, "batch"), p.PerBatch))
	var rows [][]string
	for _, e := range r.Engines {
		if e.Skipped != "" {
			rows = append(rows, []string{e.ID, "skipped: " + e.Skipped, "", "", ""})
			continue
		}
		laravel := summarize(seriesOf(e.Resets, "laravel/big"))
		for _, s := range strategies {
			small, big := summarize(seriesOf(e.Resets, s+"/small")), summarize(seriesOf(e.Resets, s+"/big"))
			if big.N == 0 {
				continue
			}
			rows = append(rows, []string{e.ID + " " + s, p50p99(small), p50p99(big), fmtX(big.P50 / small.P50), fmtX(laravel.P50 / big.P50)})
		}
		if laravel.N > 0 {
			rows = append(rows, []string{e.ID + " Laravel truncation", "", p50p99(laravel), "", ""})
		}
	}
	rep.table([]string{"engine, reset", "100 rows: p50 / p99 ms", "100,000 rows: p50 / p99 ms", "big / small (p50)", "Laravel / this (p50)"}, rows)
	for _, e := range r.Engines {
		snap, laravel := median(seriesOf(e.Resets, "snapshot/big")), median(seriesOf(e.Resets, "laravel/big"))
		if e.Skipped == "" && snap > 0 {
			rep.bullet("%s: after a test that changes about 30 rows of 100,000-row tables, a snapshot reset takes p50 %s ms, %s "+
				"the same change to 100-row tables, and %s faster than Laravel's truncation (%s ms).", e.ID, fmtMs(snap),
				fmtX(snap/median(seriesOf(e.Resets, "snapshot/small"))), fmtX(laravel/snap), fmtMs(laravel))
		}
	}
}
