package client

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// maxKeptFailed is how many failed tests' databases one test binary keeps
// for inspection; later failures release theirs so that a broken suite
// does not exhaust the daemon's capacity.
const maxKeptFailed = 3

// TestOptions configures TestDB, TestTx and TestLease.
type TestOptions struct {
	// Client talks to the daemon. Nil means a client of Addr with Token
	// and CAFile, shared by every test of the binary.
	Client *Client
	// Addr is the daemon's REST address when Client is nil. Empty means the
	// daemon Main found or started when the package's TestMain calls Main,
	// else TESTDBD_ADDR, else DefaultAddr.
	Addr string
	// Token is the daemon's bearer token when Client is nil; empty means
	// TESTDBD_TOKEN.
	Token string
	// CAFile is a PEM file of the CA that signed the daemon's TLS
	// certificate (a daemon started with --tls-cert), when Client is nil;
	// empty means TESTDBD_TLS_CA. See WithCAFile.
	CAFile string

	// Template names the template to lease from. Required.
	Template string
	// MigrationsDir, when set, is a local directory of goose migrations
	// (*.sql) that the helper uploads once per test binary with
	// EnsureTemplate, so the template is built (or found by its content
	// hash) before the first lease. Relative paths are relative to the
	// test's package directory. Leave it empty when the template is built
	// elsewhere (e.g. `testdbd template ensure` in CI).
	MigrationsDir string
	// SeedSQL is run after the migrations when the helper builds the
	// template.
	SeedSQL string

	// Strategy resets the database after the test. StrategyUnspecified means
	// the daemon's default (snapshot). TestTx always uses StrategyRollback.
	Strategy Strategy
	// TTL is the lease's time to live; it must outlast the test. 0 means
	// the daemon's default (10 minutes unless configured).
	TTL time.Duration
	// WaitTimeout is how long to wait for a free database; 0 means the
	// daemon's default (30 s unless configured).
	WaitTimeout time.Duration
	// Worker is the sticky key that brings the same databases back to the
	// same package run after run. Empty means "go:" and the test's package
	// path.
	Worker string

	// Config adjusts the driver configuration (e.g. ParseTime, Loc,
	// MultiStatements) before the *sql.DB is opened.
	Config func(*mysql.Config)
	// TLS connects TestDB's, TestTx's and TestTxDSN's connections with
	// TLS, verifying the server with the lease's CA certificate (see
	// Lease.TLSConfig). Without it they connect in plain text, as the
	// lease's DSN does.
	TLS bool
	// ReleaseFailed releases a failed test's database at once. By default
	// the first few failed tests of a binary keep theirs, unreset, until the
	// lease's TTL runs out, and the test log says how to connect to it.
	ReleaseFailed bool
}

// TestLease leases a database of opts.Template for the test and releases it
// through tb.Cleanup; the daemon then resets it off the test's path by the
// lease's strategy. If the test failed, the database is kept as it is for
// inspection (see TestOptions.ReleaseFailed). Use it to hand the DSN to
// code that opens its own connections; TestDB opens a *sql.DB for you.
// Any error fails the test at once.
func TestLease(tb testing.TB, opts TestOptions) *Lease {
	tb.Helper()
	c := opts.mustClient(tb)
	if opts.Template == "" {
		tb.Fatal("testdbd: TestOptions.Template is empty: name the template to lease from")
	}
	hash := ""
	if opts.MigrationsDir != "" {
		var err error
		if hash, err = ensureOnce(c, opts); err != nil {
			tb.Fatalf("testdbd: template %s from %s: %v", opts.Template, opts.MigrationsDir, err)
		}
	}
	worker := opts.Worker
	if worker == "" {
		worker = callerWorker()
	}
	// The daemon bounds the wait (its --max-wait-timeout, 10 minutes unless
	// configured); this deadline only guards against a daemon that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), max(opts.WaitTimeout, 10*time.Minute)+time.Minute)
	defer cancel()
	l, err := c.AcquireLease(ctx, AcquireLeaseRequest{
		Template: opts.Template, Strategy: opts.Strategy, TTLSeconds: seconds(opts.TTL),
		Worker: worker, WaitTimeoutMs: opts.WaitTimeout.Milliseconds(), TemplateHash: hash,
	})
	if err != nil {
		tb.Fatalf("testdbd: lease a database of template %s: %v", opts.Template, err)
	}
	tb.Cleanup(func() { endTestLease(tb, c, l, opts.ReleaseFailed) })
	return l
}

// endTestLease releases a test's lease when the test ends, or keeps a
// failed test's database. A lease that testdbd ended before the test did
// (its TTL ran out, it outgrew its space, its server died) fails the test
// with the reason, which explains the errors its connections got ("lost
// connection", "access denied").
func endTestLease(tb testing.TB, c *Client, l *Lease, releaseFailed bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if tb.Failed() && !releaseFailed {
		if now, err := c.GetLease(ctx, l.ID); err == nil && now.State != "active" {
			tb.Errorf("testdbd: lease %s (database %s) ended before the test did: %s", l.ID, l.Database, now.EndedReason)
			return
		}
		if keptFailed.Add(1) <= maxKeptFailed {
			tb.Logf("testdbd: the test failed, so its database is kept as it was until its lease ends (%s):\n"+
				"  mariadb -h %s -P %d -u %s -p%s %s\n"+
				"  give it back sooner with: testdbd release %s",
				l.ExpiresAt.Local().Format("15:04:05Z07:00"), l.Host, l.Port, l.User, l.Password, l.Database, l.ID)
			return
		}
	}
	now, err := c.ReleaseLease(ctx, l.ID)
	switch {
	case err != nil:
		tb.Errorf("testdbd: release lease %s: %v", l.ID, err)
	case now.State != "released" || now.EndedReason != "" && !strings.HasPrefix(now.EndedReason, "released"):
		tb.Errorf("testdbd: lease %s (database %s) ended before the test did: %s", l.ID, l.Database, now.EndedReason)
	}
}

// TestDB returns a *sql.DB for the test's own database: a lease of
// opts.Template taken for this test, closed and released through
// tb.Cleanup, after which the daemon resets it by opts.Strategy. Tests that
// call it may run in parallel; each gets its own database.
func TestDB(tb testing.TB, opts TestOptions) *sql.DB {
	tb.Helper()
	opts.Client = opts.mustClient(tb)
	l := TestLease(tb, opts)
	db, err := openLease(l, opts.driverConfig(tb, l))
	if err != nil {
		tb.Fatalf("testdbd: connect to lease %s: %v", l.ID, err)
	}
	leases.Store(db, leaseRef{c: opts.Client, id: l.ID})
	tb.Cleanup(func() { // before the release registered by TestLease
		leases.Delete(db)
		db.Close()
	})
	return db
}

// TestTx returns a transaction on the test's own database that the test
// works in, as Laravel's RefreshDatabase or Django's TestCase do. At cleanup
// the transaction is rolled back and the lease is reset with
// StrategyRollback: the daemon rewinds the AUTO_INCREMENT counters the
// rolled-back inserts moved and checks that nothing was committed (the
// tables' last commit on MariaDB, or CHECKSUM TABLE). If something was (a second connection, DDL's implicit commit,
// an explicit COMMIT), it restores those tables and the test log shows the
// report's fallback_reason. The database is then released.
//
// The returned *sql.Tx holds one connection; code under test must use it,
// not a pool of its own, for its writes to be rolled back.
func TestTx(tb testing.TB, opts TestOptions) *sql.Tx {
	tb.Helper()
	opts.Strategy = StrategyRollback
	opts.ReleaseFailed = true // the rollback removes the evidence anyway
	c := opts.mustClient(tb)
	opts.Client = c
	l := TestLease(tb, opts)
	db, err := openLease(l, opts.driverConfig(tb, l))
	if err != nil {
		tb.Fatalf("testdbd: connect to lease %s: %v", l.ID, err)
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		db.Close()
		tb.Fatalf("testdbd: begin a transaction on lease %s: %v", l.ID, err)
	}
	tb.Cleanup(func() {
		_ = tx.Rollback() // ErrTxDone when the test ended it itself
		db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := c.ResetLease(ctx, l.ID, StrategyRollback)
		if err != nil {
			tb.Errorf("testdbd: reset lease %s: %v", l.ID, err)
			return
		}
		if rep.FallbackReason != "" {
			tb.Logf("testdbd: the rollback reset did more than roll back: %s (tables %s)",
				rep.FallbackReason, strings.Join(rep.TablesReset, ", "))
		}
	})
	return tx
}

// OpenDB opens a *sql.DB on a lease's database with go-sql-driver/mysql;
// config, when not nil, adjusts the driver configuration first. The caller
// closes it.
func OpenDB(l *Lease, config func(*mysql.Config)) (*sql.DB, error) {
	return openLease(l, config)
}

func openLease(l *Lease, config func(*mysql.Config)) (*sql.DB, error) {
	cfg, err := leaseConfig(l, config)
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// leaseConfig is the driver configuration of a lease: its DSN, with a
// logger that leaves out the driver's note about idle connections a reset
// ended (they are expected), adjusted by config.
func leaseConfig(l *Lease, config func(*mysql.Config)) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(l.DSN)
	if err != nil {
		return nil, fmt.Errorf("the lease's DSN: %w", err)
	}
	cfg.Logger = quietLogger{}
	if config != nil {
		config(cfg)
	}
	return cfg, nil
}

// quietLogger is go-sql-driver's default logger without "closing bad idle
// connection", which every connection a reset ended would print.
type quietLogger struct{}

var driverLog = log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime|log.Lshortfile)

func (quietLogger) Print(v ...any) {
	msg := fmt.Sprint(v...)
	if strings.Contains(msg, "closing bad idle connection") {
		return
	}
	_ = driverLog.Output(2, msg)
}

// keptFailed counts the failed tests of this binary whose database was kept.
var keptFailed atomic.Int64

// shared holds what every test of one binary shares: a client per daemon
// (so connections are reused) and the templates ensured once. A test binary
// is one process, so this is process-wide state by design, as in pgtestdb.
var shared = struct {
	mu        sync.Mutex
	clients   map[string]*Client
	templates map[string]*ensureResult
}{clients: map[string]*Client{}, templates: map[string]*ensureResult{}}

type ensureResult struct {
	done chan struct{}
	hash string // the build ensured, which leases are pinned to
	err  error
}

// mustClient returns the client the options name, skipping the test when
// Main found no daemon to use (or failing it, when told to), and failing
// it on any other error.
func (o TestOptions) mustClient(tb testing.TB) *Client {
	tb.Helper()
	if o.Client != nil {
		return o.Client
	}
	addr, token, caFile := o.Addr, o.Token, o.CAFile
	if addr == "" {
		d, err := mainDaemon()
		switch {
		case err != nil && d.require:
			tb.Fatalf("testdbd: %v", err)
		case err != nil:
			tb.Skipf("testdbd: %v", err)
		}
		addr = d.addr
	}
	addr = cmp.Or(addr, os.Getenv("TESTDBD_ADDR"))
	token = cmp.Or(token, os.Getenv("TESTDBD_TOKEN"))
	caFile = cmp.Or(caFile, os.Getenv("TESTDBD_TLS_CA"))
	c, err := sharedClient(addr, token, caFile)
	if err != nil {
		tb.Fatalf("testdbd: %v", err)
	}
	return c
}

// sharedClient returns the binary's client of a daemon, made on first use.
func sharedClient(addr, token, caFile string) (*Client, error) {
	key := addr + "\x00" + token + "\x00" + caFile
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if c := shared.clients[key]; c != nil {
		return c, nil
	}
	opts := []Option{WithToken(token)}
	if caFile != "" {
		opts = append(opts, WithCAFile(caFile))
	}
	c, err := New(addr, opts...)
	if err != nil {
		return nil, err
	}
	shared.clients[key] = c
	return c, nil
}

// ensureOnce uploads opts.MigrationsDir with EnsureTemplate once per test
// binary and content; concurrent tests wait for the first one's build. It
// returns the build's hash, which the binary's leases are pinned to: a
// second checkout that ensures other migrations under the same name, on
// the same daemon, does not change the schema this binary gets.
func ensureOnce(c *Client, opts TestOptions) (string, error) {
	files, err := ReadMigrations(opts.MigrationsDir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.Addr(), opts.Template, opts.SeedSQL)
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s", f.Name, len(f.Content), f.Content)
	}
	key := hex.EncodeToString(h.Sum(nil))
	shared.mu.Lock()
	r, ok := shared.templates[key]
	if !ok {
		r = &ensureResult{done: make(chan struct{})}
		shared.templates[key] = r
	}
	shared.mu.Unlock()
	if ok {
		<-r.done
		return r.hash, r.err
	}
	defer close(r.done)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tpl, err := c.EnsureTemplate(ctx, EnsureTemplateRequest{Name: opts.Template, Migrations: files, SeedSQL: opts.SeedSQL})
	if err == nil {
		r.hash = tpl.Hash
	}
	r.err = err
	return r.hash, r.err
}

// ReadMigrations reads the goose migrations (*.sql files) of a local
// directory, sorted by name, for EnsureTemplateRequest.Migrations.
func ReadMigrations(dir string) ([]MigrationFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		return nil, fmt.Errorf("no *.sql migrations in %s", dir)
	}
	sort.Strings(paths)
	files := make([]MigrationFile, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		files = append(files, MigrationFile{Name: filepath.Base(p), Content: string(b)})
	}
	return files, nil
}

// callerWorker names the package of the test that called the helper:
// "go:" and its import path (without an external test package's _test).
func callerWorker() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if pkg := funcPackage(f.Function); pkg != "" && pkg != thisPackage && pkg != "testing" {
			return workerKey("go:" + strings.TrimSuffix(pkg, "_test"))
		}
		if !more {
			break
		}
	}
	wd, _ := os.Getwd()
	return workerKey("go:" + wd)
}

// thisPackage is this package's path, as runtime reports it.
var thisPackage = funcPackage(runtime.FuncForPC(herePC()).Name())

func herePC() uintptr {
	pc, _, _, _ := runtime.Caller(0)
	return pc
}

// funcPackage returns the package path of a function name as runtime
// reports it ("example.com/a/b.TestX.func1" is in "example.com/a/b").
func funcPackage(fn string) string {
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}

// workerKey keeps a worker key within the daemon's 128 bytes.
func workerKey(s string) string {
	if len(s) <= 128 {
		return s
	}
	return s[:3] + "…" + s[len(s)-120:]
}
