package binlog

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// endings makes an XA ROLLBACK wait for the sessions that are ending.
//
// A session that ends while it holds a prepared XA transaction hands it
// over in two steps: the server first marks the xid as free for any
// session to end (from then on XA ROLLBACK of it succeeds), and only
// afterwards does InnoDB detach the transaction from the session. An
// XA ROLLBACK that lands between the two succeeds, and the xid is gone
// from XA RECOVER, but InnoDB does not find the transaction it names: it
// stays prepared, with its row locks, seen by no one, until the server
// restarts, and every reset of its database then fails on a lock wait
// timeout. (MariaDB 10.11 does this; the server lists the session as
// ended, SHOW PROCESSLIST no longer showing it, before InnoDB detaches.)
//
// So, before an XA ROLLBACK, wait until InnoDB holds no transaction for a
// session that the process list no longer shows, or shows ending (Quit,
// Killed). A reset ends its lease's sessions and waits until the list no
// longer shows them (accounts.EndSessions), so its rollback is never
// lost. RollBackEnded, which rolls back for sessions that end by
// themselves, can still meet a session that starts to end between this
// wait and its XA ROLLBACK, while the list shows it idle; that window is
// microseconds.
//
// The process list in a reading is the server's at that moment, but
// information_schema.INNODB_TRX is a copy that InnoDB refreshes at most
// every 100 ms: it shows the transactions as they were up to 100 ms
// before. A reading serves a rollback if it was taken after the rollback
// started (after XA RECOVER, and after a reset ended its lease's
// sessions), and at least 100 ms after the newest of the transactions to
// roll back was read from the log (prepared.seen; it began before that),
// so that its copy shows them. Rollbacks waiting together share readings;
// one that counts ending sessions is taken again once its copy is stale.
type endings struct {
	mu      sync.Mutex
	at      time.Time // when the last reading was taken
	settled bool      // it counted no ending session
}

// trxCopyAge is how old information_schema.INNODB_TRX's copy may be.
const trxCopyAge = 100 * time.Millisecond

// endingWait bounds the wait: a session that takes longer to end (rolling
// back a large transaction) is not one caught between the two steps.
const endingWait = 10 * time.Second

const endingQuery = "SELECT COUNT(*) FROM information_schema.INNODB_TRX t " +
	"LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id " +
	"WHERE t.trx_mysql_thread_id <> 0 AND (p.ID IS NULL OR p.COMMAND IN ('Quit', 'Killed'))"

// wait returns once a reading that serves a rollback started at start,
// whose newest transaction was read from the log at seen, counts no
// transaction of an ending session, or endingWait has passed.
func (e *endings) wait(ctx context.Context, q Querier, start, seen time.Time) error {
	need := seen.Add(trxCopyAge)
	if need.Before(start) {
		need = start
	}
	deadline := time.Now().Add(endingWait)
	for {
		if err := sleepCtx(ctx, time.Until(need)); err != nil {
			return err
		}
		done, next, err := e.read(ctx, q, need)
		if err != nil || done || time.Now().After(deadline) {
			return err
		}
		need = next
	}
}

// read takes a reading, unless one taken since need settled it already,
// and says whether it is settled; if not, when to read again.
func (e *endings) read(ctx context.Context, q Querier, need time.Time) (settled bool, next time.Time, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.at.Before(need) && e.settled {
		return true, time.Time{}, nil
	}
	at := time.Now()
	n, err := countEnding(ctx, q)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("read InnoDB's transactions before XA ROLLBACK: %w", err)
	}
	e.at, e.settled = at, n == 0
	return e.settled, at.Add(trxCopyAge), nil
}

func countEnding(ctx context.Context, q Querier) (int, error) {
	rows, err := q.QueryContext(ctx, endingQuery)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}
