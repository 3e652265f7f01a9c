package main

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/testdbd/testdbd/internal/workload"
)

// TestLeastLoopPutsStatisticsBack: a least loop's copy starts with the
// template's statistics; its recycle after the standard test finds them
// still the template's, and after statistics of two tables the test does
// not dirty changed (a table's figure, an index's figure: what an ANALYZE
// TABLE of other data writes) it finds both and puts them back.
func TestLeastLoopPutsStatisticsBack(t *testing.T) {
	needServer(t, "starts a real server and daemon")
	bin := goBuild(t, t.TempDir(), "testdbd", "../testdbd")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := &bench{bin: bin, plan: quickPlan(), log: io.Discard, start: time.Now(), res: &Results{}, tmp: t.TempDir()}
	defer b.cleanup()
	d, err := b.poolDaemon(ctx, "pool", 2)
	if err != nil {
		t.Fatal(err)
	}
	l, ok, err := newLeastLoop(ctx, d, mainTemplate)
	if err != nil || !ok {
		t.Fatalf("least loop on the native server: ok %v, %v", ok, err)
	}
	if err := l.open(ctx, 1); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.close(context.WithoutCancel(ctx)); err != nil {
			t.Error(err)
		}
	}()
	db := l.dbs[0]
	differ := func() []string {
		t.Helper()
		sets, err := queryResults(ctx, db.admin, l.fp.recentStats(db.name, 0, nil))
		if err != nil || len(sets) != 1 || len(sets[0]) == 0 {
			t.Fatalf("read the statistics: %d results, %v", len(sets), err)
		}
		return l.fp.statsDiffer(sets[0])
	}
	if diff := differ(); len(diff) > 0 {
		t.Fatalf("a new copy's statistics of %v are not the template's", diff)
	}
	for _, s := range []string{vRollback, vSnapshot, vTruncate} {
		if _, err := l.handOut(ctx, s, 0); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if diff := differ(); len(diff) > 0 {
			t.Fatalf("after a hand-out of %s the statistics of %v are not the template's", s, diff)
		}
	}
	if n := l.statsPutBack.Load(); n != 0 {
		t.Errorf("%d recycles put statistics back after the standard test, which leaves them as the template's here", n)
	}

	var others []string
	for _, tbl := range l.fp.base {
		if !slices.Contains(workload.Dirty, tbl.Name) && len(others) < 2 {
			others = append(others, tbl.Name)
		}
	}
	if len(others) < 2 {
		t.Fatalf("the template has fewer than two tables besides the dirty ones: %v", others)
	}
	began := time.Now()
	// A table's figure of others[0]; an index's of others[1], whose table
	// row InnoDB writes at the same time.
	for _, q := range []struct{ table, sql string }{
		{others[0], "UPDATE mysql.innodb_table_stats SET n_rows = n_rows + 7, last_update = NOW() WHERE database_name = ? AND table_name = ?"},
		{others[1], "UPDATE mysql.innodb_table_stats SET last_update = NOW() WHERE database_name = ? AND table_name = ?"},
		{others[1], "UPDATE mysql.innodb_index_stats SET stat_value = stat_value + 3, last_update = NOW() WHERE database_name = ? AND table_name = ? AND stat_name = 'size'"},
	} {
		if res, err := db.admin.ExecContext(ctx, q.sql, db.name, q.table); err != nil {
			t.Fatal(err)
		} else if n, _ := res.RowsAffected(); n == 0 {
			t.Fatalf("%s of %s changed no row", q.sql, q.table)
		}
	}
	if diff := differ(); len(diff) != 2 {
		t.Fatalf("statistics changed of %v; the comparison found %v", others, diff)
	}
	if err := l.recycle(ctx, db, vRollback, began); err != nil {
		t.Fatal(err)
	}
	if n := l.statsPutBack.Load(); n != 1 {
		t.Errorf("the recycle after statistics changed counted %d put back, want 1", n)
	}
	if diff := differ(); len(diff) > 0 {
		t.Errorf("after the recycle the statistics of %v are not the template's", diff)
	}
}
