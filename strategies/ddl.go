package strategies

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ddlStatus lists the server's statement counters of schema-changing
// statements (Com_<name> in SHOW GLOBAL STATUS). Temporary tables are left
// out: they vanish with the sessions a reset ends. Names one flavor lacks
// simply do not appear.
var ddlStatus = []string{
	"alter_db", "alter_event", "alter_function", "alter_procedure", "alter_sequence", "alter_table",
	"analyze", "optimize", "repair", "truncate", "rename_table",
	"create_db", "create_event", "create_function", "create_index", "create_package", "create_package_body",
	"create_procedure", "create_sequence", "create_table", "create_trigger", "create_view",
	"drop_db", "drop_event", "drop_function", "drop_index", "drop_package", "drop_package_body",
	"drop_procedure", "drop_sequence", "drop_table", "drop_trigger", "drop_view",
}

// ddlStatusQuery reads the counters above.
var ddlStatusQuery = func() string {
	names := make([]string, len(ddlStatus))
	for i, n := range ddlStatus {
		names[i] = "'Com_" + n + "'"
	}
	return "SHOW GLOBAL STATUS WHERE Variable_name IN (" + strings.Join(names, ",") + ")"
}()

// DDLCounter counts the schema-changing statements the daemon itself runs on
// one server, so that a reset can tell whether anybody else (a test) changed
// a schema since the last baseline: the server's counters moved by more
// than the daemon's did.
//
// The daemon's batches of such statements and the reads of the server's
// counters never overlap (a two-class lock: batches run together, reads run
// together, but not a batch and a read), so that every read sees each
// batch either wholly or not at all, and the daemon's count at that moment
// is exact. Work the daemon cannot count (running a template's migrations)
// is marked with Unaccounted, and so are failed batches; a check whose
// window saw either does not trust the counters.
// Safe for concurrent use.
type DDLCounter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	active  [2]int // holders by class
	waiting [2]int
	turn    int   // the class that goes next when both wait
	done    int64 // statements of batches that completed successfully
	failed  int64 // batches that failed (their partial count is unknown)
	unknown int64 // increments when uncountable work starts and ends

	smu      sync.Mutex
	next     *scan // the scan the next detection requests join
	scanning bool  // a goroutine runs scans

	// sampling is held shared by restores that lower the server's
	// statistics sampling while they set big tables' counters (see
	// lowSampling), and exclusively by FullSampling.
	sampling sync.RWMutex
}

const (
	classBatch = 0
	classRead  = 1
)

func (c *DDLCounter) lock(class int) {
	c.mu.Lock()
	if c.cond == nil {
		c.cond = sync.NewCond(&c.mu)
	}
	other := 1 - class
	c.waiting[class]++
	for c.active[other] > 0 || (c.waiting[other] > 0 && c.turn == other) {
		c.cond.Wait()
	}
	c.waiting[class]--
	c.active[class]++
	c.mu.Unlock()
}

func (c *DDLCounter) unlock(class int) {
	c.mu.Lock()
	c.active[class]--
	if c.active[class] == 0 {
		c.turn = 1 - class
		if c.cond != nil {
			c.cond.Broadcast()
		}
	}
	c.mu.Unlock()
}

// Exec runs query, a batch holding exactly planned statements counted in
// ddlStatus (and any number of other statements), on db.
//
// Given a pool, it takes a connection before waiting for the batch lock:
// reads hold the lock back while their holders wait for connections.
func (c *DDLCounter) Exec(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, planned int, query string) error {
	if pool, ok := db.(*sql.DB); ok {
		conn, err := pool.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		db = conn
	}
	c.lock(classBatch)
	defer c.unlock(classBatch)
	_, err := db.ExecContext(ctx, query)
	c.mu.Lock()
	if err == nil {
		c.done += int64(planned)
	} else {
		c.failed++
	}
	c.mu.Unlock()
	return err
}

// Unaccounted runs fn, schema-changing work whose statements cannot be
// counted (a template's migrations); checks whose window overlaps it do not
// trust the counters. It does not hold reads back: the work may be long.
func (c *DDLCounter) Unaccounted(fn func() error) error {
	c.mu.Lock()
	c.unknown++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.unknown++
		c.mu.Unlock()
	}()
	return fn()
}

// mark is the daemon's count at the moment of a read of the server's
// counters.
type mark struct {
	own     int64 // statements of completed batches
	failed  int64 // failed batches so far
	unknown int64
}

// observe runs a read of the server's counters with no batch in flight and
// returns the daemon's count at that moment.
func (c *DDLCounter) observe(fn func() error) (mark, error) {
	c.lock(classRead)
	defer c.unlock(classRead)
	c.mu.Lock()
	m := mark{own: c.done, failed: c.failed, unknown: c.unknown}
	c.mu.Unlock()
	return m, fn()
}

type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// The server's statistics sampling (innodb_stats_persistent_sample_pages):
// how many leaf pages per index InnoDB reads when it recomputes a table's
// persistent statistics. MariaDB recomputes them at every ALTER TABLE,
// AUTO_INCREMENT alone too: on a 100,000-row table with four indexes the
// ALTER took 7 ms at 20 pages, under 1 ms at 1. A restore throws those figures away
// on big tables anyway (it puts the template's back), so it lowers the
// sampling around their ALTERs (see restorePlan.lowered).
const (
	lowSampling     = "SET GLOBAL innodb_stats_persistent_sample_pages = 1"
	defaultSampling = "SET GLOBAL innodb_stats_persistent_sample_pages = DEFAULT"
)

// lowerSampling lets a restore lower the server's statistics sampling
// around its ALTERs, unless statistics that are kept are being computed
// (FullSampling): then it returns false, and the restore sets its counters
// at the server's sampling. Otherwise the restore calls release once its
// batch has ended.
func (c *DDLCounter) lowerSampling() (release func(), ok bool) {
	if !c.sampling.TryRLock() {
		return nil, false
	}
	return c.sampling.RUnlock, true
}

// restoreSampling sets the server's statistics sampling back after a
// restore that lowered it failed midway, as far as the server answers
// within a few seconds (FullSampling sets it back before any analysis
// all the same).
func restoreSampling(db *sql.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = db.ExecContext(ctx, defaultSampling)
}

// FullSampling runs fn, which computes statistics the daemon keeps (a
// template's ANALYZE TABLE), at the server's own sampling: it waits for the
// restores that lowered it, and holds new ones back from lowering it (they
// set their counters at full sampling meanwhile). It sets the sampling back
// first, in case a failed restore left it lowered.
func (c *DDLCounter) FullSampling(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, fn func() error) error {
	c.sampling.Lock()
	defer c.sampling.Unlock()
	if _, err := db.ExecContext(ctx, defaultSampling); err != nil {
		return fmt.Errorf("set the statistics sampling back: %w", err)
	}
	return fn()
}
