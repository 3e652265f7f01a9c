package strategies

import (
	"context"
	"database/sql"
	"strings"
	"sync"
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

// ddlStatusQuery reads the sum of the counters above.
var ddlStatusQuery = func() string {
	names := make([]string, len(ddlStatus))
	for i, n := range ddlStatus {
		names[i] = "'Com_" + n + "'"
	}
	return "SHOW GLOBAL STATUS WHERE Variable_name IN (" + strings.Join(names, ",") + ")"
}()

// DDLCounter counts the schema-changing statements the daemon itself runs on
// one server, so that a reset can tell whether anybody else (a test) changed
// a schema since the last baseline: the server's own counters moved by more
// than the daemon's did.
//
// The arithmetic is conservative. A baseline records the server's count G0
// and Upper() (statements done plus statements of batches in flight); a
// later check records Lower() (statements of completed batches) before
// reading the server's count G1. Then (G1-G0) - (Lower-Upper) is never less
// than the statements others ran in between; failed batches only make it
// larger. Safe for concurrent use.
type DDLCounter struct {
	mu       sync.Mutex
	done     int64 // statements of batches that completed successfully
	inflight int64 // statements of batches running now
}

// Exec runs query, which holds exactly planned statements counted in
// ddlStatus (and any number of other statements), on db.
func (c *DDLCounter) Exec(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, planned int, query string) error {
	c.mu.Lock()
	c.inflight += int64(planned)
	c.mu.Unlock()
	_, err := db.ExecContext(ctx, query)
	c.mu.Lock()
	c.inflight -= int64(planned)
	if err == nil {
		c.done += int64(planned)
	}
	c.mu.Unlock()
	return err
}

// Query is Exec for a batch whose last statements return rows; fn reads
// them before the batch counts as done.
func (c *DDLCounter) Query(ctx context.Context, db queryer, planned int, query string, fn func(*sql.Rows) error) error {
	c.mu.Lock()
	c.inflight += int64(planned)
	c.mu.Unlock()
	err := func() error {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := fn(rows); err != nil {
			return err
		}
		return rows.Close()
	}()
	c.mu.Lock()
	c.inflight -= int64(planned)
	if err == nil {
		c.done += int64(planned)
	}
	c.mu.Unlock()
	return err
}

// Lower returns the statements of batches that completed successfully.
func (c *DDLCounter) Lower() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Upper returns Lower plus the statements of batches in flight.
func (c *DDLCounter) Upper() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done + c.inflight
}

type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}
