package binlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestRollBackAsSessionEnds: a prepared XA transaction rolled back as
// soon as its client disconnects, over and over, is rolled back for good
// every time: its row is free once RollBackEnded says so. A rollback that
// landed while the session was still handing the transaction over would
// succeed and leave the row locked by a transaction no XA RECOVER lists.
func TestRollBackAsSessionEnds(t *testing.T) {
	const rounds = 50
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.ServerOf(t, p)
			var log binlog.Log
			a := newLease(t, srv, "xa_end")
			for i := range rounds {
				xid := fmt.Sprintf("e%d", i)
				c := a.session(t)
				prepare(t, c, xid, "UPDATE t SET v = v + 1 WHERE id = 1")
				// The log is read while the session still holds it (which
				// XA ROLLBACK refuses), as the daemon's rounds do.
				if ended, err := log.RollBackEnded(ctx, srv.DB); err != nil || len(ended) > 0 {
					t.Fatalf("round %d: rolled back %v (%v) while its session holds it", i, ended, err)
				}
				disconnect(c)
				rolled := false
				for try := 0; !rolled; try++ {
					ended, err := log.RollBackEnded(ctx, srv.DB)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range ended {
						rolled = rolled || e.ID.String() == "'"+xid+"'"
					}
					if try == 10_000 {
						t.Fatalf("round %d: %s was never rolled back; still prepared: %v", i, xid, names(prepared(t, srv.DB)))
					}
				}
				tx, err := srv.DB.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				_, err = tx.ExecContext(ctx, "SELECT v FROM xa_end.t WHERE id = 1 FOR UPDATE NOWAIT")
				_ = tx.Rollback()
				if err != nil {
					t.Fatalf("round %d: the row %s wrote stays locked after its rollback (%v); still prepared: %v",
						i, xid, err, names(prepared(t, srv.DB)))
				}
			}
		})
	}
}
