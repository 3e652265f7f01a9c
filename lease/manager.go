// Package lease hands out worker databases. It keeps the templates and a
// pool of ready worker databases per template, leases them with their own
// MySQL user and a TTL, makes callers wait in FIFO order when capacity is
// exhausted, and resets databases (timing every reset) when leases are
// reset, released or expire. It starts servers through an instance.Fleet
// within the capacity limits and replaces servers that die.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/strategies"
)

// Defaults for the zero values of Config.
const (
	DefaultPoolSize     = 2
	DefaultTTL          = 10 * time.Minute
	DefaultMaxTTL       = 24 * time.Hour
	DefaultWait         = 30 * time.Second
	DefaultMaxWait      = 10 * time.Minute
	DefaultClones       = 2
	DefaultPerInstance  = 32
	DefaultMaxDatabases = 64
	DefaultIdleTrim     = time.Minute
	instanceEstimate    = 150 << 20 // memory a new server needs before it holds data
	tableEstimate       = 128 << 10 // tmpfs bytes of one small InnoDB table
)

// Config configures a Manager.
type Config struct {
	Fleet             *instance.Fleet
	MaxDatabases      int   // worker databases in all
	MaxDBsPerInstance int   // worker databases on one server
	MemoryBudget      int64 // bytes for servers (RSS) and their datadirs; 0 means no limit
	PoolSize          int   // ready databases kept per template by default
	Clones            int   // databases created in parallel in the background
	DefaultTTL        time.Duration
	MaxTTL            time.Duration
	DefaultWait       time.Duration
	MaxWait           time.Duration
	DefaultStrategy   testdbd.Strategy
	Registerer        prometheus.Registerer // nil means no metrics
	Logger            *slog.Logger
	// IdleTrim drops ready databases beyond a pool's target once they have
	// been idle this long (a burst of demand grows pools; this shrinks them
	// back). 0 means DefaultIdleTrim.
	IdleTrim time.Duration
}

// Manager owns templates, worker databases and leases. It is safe for
// concurrent use.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	fleet *instance.Fleet
	stats *stats
	mem   memory

	ctx      context.Context // canceled by Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	bgMu     sync.Mutex // orders wg.Add before Close's wg.Wait
	bgClosed bool
	kick     chan struct{} // wakes the pool filler

	mu        sync.Mutex
	closed    bool
	templates map[string]*template // by name
	retired   []*template          // replaced templates still holding leases
	servers   map[string]*server   // by instance id
	leases    map[string]*lease    // active leases by id
	ended     map[string]*lease    // recently ended leases, for clear errors
	endedFIFO []string
	dbTotal   int // worker databases, all states
	seq       int64
	starting  int // servers being started by the filler
	jobs      int // background creations running
	builds    int // first builds of templates started
}

// server is the manager's view of one running server.
type server struct {
	srv      *instance.Server
	ddl      *strategies.DDLCounter
	dbs      int  // worker databases on it, all states
	tables   int  // tables of every database testdbd made on it
	dead     bool // it died; nothing new goes there
	deathErr error
	tdc      int    // table_definition_cache it runs with
	recalc   string // innodb_stats_auto_recalc it runs with, when not OFF
}

// New returns a manager; Open starts its background work.
func New(cfg Config) *Manager {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.Clones <= 0 {
		cfg.Clones = DefaultClones
	}
	if cfg.MaxDatabases <= 0 {
		cfg.MaxDatabases = DefaultMaxDatabases
	}
	if cfg.MaxDBsPerInstance <= 0 {
		cfg.MaxDBsPerInstance = DefaultPerInstance
	}
	if cfg.DefaultTTL <= 0 {
		cfg.DefaultTTL = DefaultTTL
	}
	if cfg.MaxTTL <= 0 {
		cfg.MaxTTL = DefaultMaxTTL
	}
	if cfg.DefaultWait <= 0 {
		cfg.DefaultWait = DefaultWait
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.IdleTrim <= 0 {
		cfg.IdleTrim = DefaultIdleTrim
	}
	if cfg.DefaultStrategy == testdbd.StrategyDefault {
		cfg.DefaultStrategy = testdbd.StrategySnapshot
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		cfg: cfg, log: cfg.Logger, fleet: cfg.Fleet, stats: newStats(cfg.Registerer),
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1),
		templates: map[string]*template{}, servers: map[string]*server{},
		leases: map[string]*lease{}, ended: map[string]*lease{},
	}
}

// Open adopts the fleet's running servers and starts the pool filler.
func (m *Manager) Open() {
	for _, s := range m.fleet.Servers() {
		m.adopt(s)
	}
	m.wg.Add(1)
	go m.fillLoop()
}

// Close stops background work and waits for it. Servers are the fleet's to
// stop.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	for _, l := range m.leases {
		if l.timer != nil {
			l.timer.Stop()
		}
	}
	for _, t := range m.templates {
		for _, w := range t.waiters {
			w.reason = "the daemon is shutting down"
			close(w.gone)
		}
		t.waiters = nil
	}
	m.mu.Unlock()
	m.bgMu.Lock()
	m.bgClosed = true
	m.bgMu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("background work did not stop: %w", ctx.Err())
	}
}

// OnInstanceDeath is the fleet's OnDeath callback: leases on the server fail
// with a clear error, its databases leave the pools, and the filler starts
// replacements as demand requires.
func (m *Manager) OnInstanceDeath(s *instance.Server, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.servers[s.ID()]
	if st == nil {
		return
	}
	st.dead, st.deathErr = true, err
	delete(m.servers, s.ID())
	reason := fmt.Sprintf("server instance %s died (%v)", s.ID(), err)
	for _, t := range m.allTemplatesLocked() {
		t.dropServerLocked(m, st, reason)
	}
	m.kickFill()
}

// adopt starts tracking a running server.
func (m *Manager) adopt(s *instance.Server) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adoptLocked(s)
}

func (m *Manager) adoptLocked(s *instance.Server) *server {
	if st, ok := m.servers[s.ID()]; ok {
		return st
	}
	st := &server{srv: s, ddl: &strategies.DDLCounter{}, tdc: instance.DefaultConfig.TableCacheSize()}
	for _, set := range s.Settings {
		switch {
		case set.Name == "table_definition_cache":
			fmt.Sscan(set.Actual, &st.tdc)
		case set.Name == "innodb_stats_auto_recalc" && !set.OK:
			st.recalc = set.Actual
		}
	}
	select {
	case <-s.Done(): // it died before it was adopted
		st.dead, st.deathErr = true, s.Err()
	default:
		m.servers[s.ID()] = st
	}
	return st
}

// untrusted says why the detector's preconditions do not hold on st, or "".
func (st *server) untrusted() string {
	if st.recalc != "" {
		return "innodb_stats_auto_recalc is " + st.recalc + ", so statistics recalculation can reset MODIFIED_COUNTER"
	}
	if st.tables*2 > st.tdc {
		return fmt.Sprintf("the server holds %d tables, more than half its table_definition_cache of %d, so a table could be evicted and lose its counters", st.tables, st.tdc)
	}
	return ""
}

// tableBudget is how many tables testdbd puts on one server: half the table
// definition cache, so that no table is ever evicted (eviction resets the
// counters dirty-table detection reads).
func (st *server) tableBudget() int { return st.tdc / 2 }

func (m *Manager) allTemplatesLocked() []*template {
	all := make([]*template, 0, len(m.templates)+len(m.retired))
	for _, t := range m.templates {
		all = append(all, t)
	}
	return append(all, m.retired...)
}

func (m *Manager) kickFill() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// goBackground runs fn as background work owned by the manager; once Close
// has begun it runs nothing.
func (m *Manager) goBackground(fn func(ctx context.Context)) {
	m.bgMu.Lock()
	defer m.bgMu.Unlock()
	if m.bgClosed {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn(m.ctx)
	}()
}

func (m *Manager) nextSeq() int64 {
	m.seq++
	return m.seq
}

// randomString returns n random characters from alphabet.
func randomString(n int, alphabet string) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = alphabet[k.Int64()]
	}
	return string(b)
}

func randomID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// errClosed is returned once Close has begun.
var errClosed = testdbd.Errorf(testdbd.EUnavailable, "the daemon is shutting down")

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

var _ migrations.Execer = (*strategies.DDLCounter)(nil)
