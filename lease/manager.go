package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/stats"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
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
	DefaultStaleBuild   = 10 * time.Minute
	DefaultBuildTimeout = 10 * time.Minute
	DefaultMaxBuild     = time.Hour
	DefaultMaxBuilds    = 2
	DefaultLeaseConns   = 32
	DefaultMaxLeaseConn = 64
	// AdminHeadroom is the connections a server keeps for testdbd itself
	// beyond every lease at its cap: the admin and status pools, builds.
	AdminHeadroom = 64
)

// Config configures a Manager.
type Config struct {
	// Fleet serves the default engine: templates whose request names no
	// engine. Fleets serve more engines, one each (e.g. MySQL 9.7 beside
	// MariaDB 11.8): a template's request names its engine.
	Fleet             *instance.Fleet
	Fleets            []*instance.Fleet
	MaxDatabases      int   // worker databases in all
	MaxDBsPerInstance int   // worker databases on one server
	MemoryBudget      int64 // bytes for servers (RSS) and their datadirs; 0 means no limit
	PoolSize          int   // ready databases kept per template by default
	Clones            int   // databases created in parallel in the background
	DefaultTTL        time.Duration
	MaxTTL            time.Duration
	DefaultWait       time.Duration
	MaxWait           time.Duration
	Registerer        prometheus.Registerer // nil means no metrics
	Logger            *slog.Logger
	// LeaseSpace is the most bytes a leased database's data files may take;
	// SpaceReserve the free space kept on every server's datadir (0: a
	// tenth of its size). See space.go.
	LeaseSpace   int64
	SpaceReserve int64
	// MigrationsRoot is the directory whose tree migrations_dir must lie in
	// ("": the working directory).
	MigrationsRoot string
	// LeaseConnections caps each lease's connections (MAX_USER_CONNECTIONS
	// of its account), so that a test that leaks connections cannot take
	// the server's from other leases; a request may ask for up to
	// MaxLeaseConnections. The servers' max_connections must leave room
	// for every database at the maximum plus AdminHeadroom.
	LeaseConnections    int
	MaxLeaseConnections int
	// BuildTimeout bounds a template's build (its migrations and seed) when
	// the request gives no limit; MaxBuildTimeout is the longest a request
	// may ask for. MaxBuilds is how many builds run at once; others wait.
	BuildTimeout    time.Duration
	MaxBuildTimeout time.Duration
	MaxBuilds       int
	// IdleTrim drops ready databases beyond a pool's target once they have
	// been idle this long (a burst of demand grows pools; this shrinks them
	// back). 0 means DefaultIdleTrim.
	IdleTrim time.Duration
	// StaleBuild is how long a build its name no longer points at stays
	// leasable by hash after its last lease, ensure or acquire. 0 means
	// DefaultStaleBuild.
	StaleBuild time.Duration
	// CacheDir is the template cache's directory (templates.Cache); empty
	// means no cache. CacheBytes caps it (0: no cap).
	CacheDir   string
	CacheBytes int64
	// LeaseRecord is the file that keeps the ids of the live leases across
	// restarts (record.go), in the state directory; empty means none.
	LeaseRecord string
}

// Manager owns templates, worker databases and leases. It is safe for
// concurrent use.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	fleet *instance.Fleet
	stats *stats.Recorder
	mem   memory

	ctx      context.Context // canceled, with errClosed, by Shutdown
	cancel   context.CancelCauseFunc
	wg       sync.WaitGroup
	bgMu     sync.Mutex // orders wg.Add before Close's wg.Wait
	bgClosed bool
	kick     chan struct{} // wakes the pool filler
	// buildSlots holds a token per template build running (MaxBuilds).
	buildSlots chan struct{}

	mu        sync.Mutex
	closed    bool
	templates map[string][]*template // live builds by name (see EnsureTemplate)
	cache     *templates.Cache       // nil without Config.CacheDir
	retired   []*template            // replaced templates still holding leases
	hosts     map[string]*host       // by instance id
	leases    map[string]*lease      // active leases by id
	ended     map[string]*lease      // recently ended leases, for clear errors
	endedFIFO []string
	dbTotal   int // worker databases, all states
	seq       int64
	starting  map[*instance.Fleet]int // servers being started by the filler, by fleet
	fleets    []*instance.Fleet       // Config.Fleet, then Config.Fleets
	jobs      int                     // background creations running
	builds    int                     // first builds of templates started
	// lost are the leases of the daemon before a restart, record the
	// lease record (nil without Config.LeaseRecord): record.go.
	lost   map[string]lostLease
	record *leaseRecord
}

// New returns a manager; Open starts its background work.
func New(cfg Config) *Manager {
	positive(&cfg.PoolSize, DefaultPoolSize)
	positive(&cfg.Clones, DefaultClones)
	positive(&cfg.MaxDatabases, DefaultMaxDatabases)
	positive(&cfg.MaxDBsPerInstance, DefaultPerInstance)
	positive(&cfg.DefaultTTL, DefaultTTL)
	positive(&cfg.MaxTTL, DefaultMaxTTL)
	positive(&cfg.DefaultWait, DefaultWait)
	positive(&cfg.MaxWait, DefaultMaxWait)
	positive(&cfg.IdleTrim, DefaultIdleTrim)
	positive(&cfg.StaleBuild, DefaultStaleBuild)
	positive(&cfg.BuildTimeout, DefaultBuildTimeout)
	positive(&cfg.MaxBuildTimeout, DefaultMaxBuild)
	positive(&cfg.MaxBuilds, DefaultMaxBuilds)
	positive(&cfg.LeaseConnections, DefaultLeaseConns)
	positive(&cfg.LeaseSpace, DefaultLeaseSpace)
	positive(&cfg.MaxLeaseConnections, DefaultMaxLeaseConn)
	cfg.MaxLeaseConnections = max(cfg.MaxLeaseConnections, cfg.LeaseConnections)
	cfg.MaxBuildTimeout = max(cfg.MaxBuildTimeout, cfg.BuildTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MigrationsRoot == "" {
		cfg.MigrationsRoot, _ = os.Getwd()
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	var cache *templates.Cache
	if cfg.CacheDir != "" {
		cache = &templates.Cache{Dir: cfg.CacheDir, MaxBytes: cfg.CacheBytes}
	}
	return &Manager{cache: cache,
		cfg: cfg, log: cfg.Logger, fleet: cfg.Fleet, fleets: append([]*instance.Fleet{cfg.Fleet}, cfg.Fleets...),
		starting: map[*instance.Fleet]int{}, stats: stats.New(cfg.Registerer),
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), buildSlots: make(chan struct{}, cfg.MaxBuilds),
		templates: map[string][]*template{}, hosts: map[string]*host{},
		leases: map[string]*lease{}, ended: map[string]*lease{}, lost: map[string]lostLease{},
	}
}

// positive sets *v to def unless it is positive.
func positive[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Open adopts the fleet's running servers and starts the pool filler.
func (m *Manager) Open() {
	m.openRecord()
	for _, s := range m.members() {
		m.adopt(s)
	}
	m.wg.Add(3)
	go m.fillLoop()
	go m.spaceLoop()
	go m.xaLoop()
}

// Shutdown begins the manager's end, and returns: nothing new starts (no
// build, replica, server or pool fill; ensures and acquires fail with
// errClosed), builds and background work are stopped (their context is
// canceled with errClosed), and callers waiting for a build or a database
// are told, Unavailable, that the daemon is shutting down. Calls in flight
// thus end at once, before the API waits for them. Close waits for the
// background work to end.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	m.closed = true
	for _, l := range m.leases {
		if l.timer != nil {
			l.timer.Stop()
		}
	}
	for _, t := range m.liveLocked() {
		for _, w := range t.waiters {
			w.reason = "the daemon is shutting down"
			close(w.gone)
		}
		t.waiters = nil
	}
	for _, t := range m.allTemplatesLocked() {
		if t.ext != nil && t.ext.timer != nil {
			t.ext.timer.Stop() // the server goes with its build database
		}
	}
	if err := m.record.close(time.Now()); err != nil {
		m.log.Warn("lease record", "err", err)
	}
	m.record = nil
	m.mu.Unlock()
	m.bgMu.Lock()
	m.bgClosed = true
	m.bgMu.Unlock()
	m.cancel(errClosed)
}

// Close stops background work (Shutdown) and waits for it, bounded by ctx.
// Servers are the fleet's to stop.
func (m *Manager) Close(ctx context.Context) error {
	m.Shutdown()
	defer m.stopRowStreams()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("background work did not stop: %w", ctx.Err())
	}
}

// stopRowStreams stops following the servers' binary logs.
func (m *Manager) stopRowStreams() {
	m.mu.Lock()
	var streams []*binlog.Rows
	for _, st := range m.hosts {
		if st.rows != nil {
			streams = append(streams, st.rows)
		}
	}
	m.mu.Unlock()
	for _, r := range streams {
		r.Close()
	}
}

func (m *Manager) allTemplatesLocked() []*template {
	return append(m.liveLocked(), m.retired...)
}

// liveLocked returns every live build of every name.
func (m *Manager) liveLocked() []*template {
	var all []*template
	for _, ts := range m.templates {
		all = append(all, ts...)
	}
	return all
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

// errClosed is returned once Shutdown has begun.
var errClosed = testdbd.Errorf(testdbd.EUnavailable, "the daemon is shutting down")

// stoppedByShutdown is the error of a build that the daemon's shutdown
// stopped (whatever the build was doing, it failed because its context
// ended): Unavailable, as every call the shutdown ends.
func stoppedByShutdown(t *template) error {
	return testdbd.Errorf(testdbd.EUnavailable,
		"the daemon is shutting down: the build of template %s was stopped; ensure it again once the daemon is back", t.name)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// isClosed reports whether ch is closed (a done channel).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

var _ schema.Execer = (*strategies.DDLCounter)(nil)

// Stats are the manager's counters and latency percentiles.
type Stats struct {
	stats.Snapshot
	LeasesActive int
	Instances    int
	Databases    int // worker databases, all states
	Templates    int
}

// Stats returns counters and latency percentiles over the recent samples.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	out := Stats{LeasesActive: len(m.leases), Instances: len(m.hosts), Databases: m.dbTotal, Templates: len(m.templates)}
	m.mu.Unlock()
	out.Snapshot = m.stats.Snapshot()
	return out
}

// event records something an operator should know about (GetEvents).
func (m *Manager) event(level, kind, msg, template, leaseID, instanceID, database string) {
	m.stats.RecordEvent(stats.Event{Level: level, Kind: kind, Message: msg, Template: template,
		LeaseID: leaseID, InstanceID: instanceID, Database: database})
}

// Events returns up to limit of the newest resets and events after seq
// after, newest first.
func (m *Manager) Events(limit int, after int64) ([]stats.ResetEvent, []stats.Event) {
	return m.stats.Recent(limit, after)
}
