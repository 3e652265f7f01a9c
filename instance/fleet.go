package instance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
)

// FleetConfig configures a Fleet.
type FleetConfig struct {
	// MaxInstances caps the servers running at once; 0 means 1.
	MaxInstances int
	// Settings tunes the server settings.
	Settings Config
	// AdminConns caps each server's pool of administrative connections.
	AdminConns int
	// OnDeath is called (in its own goroutine) when a server exits without
	// being stopped. The fleet has already removed it from its list.
	OnDeath func(s *Member, err error)
	Logger  *slog.Logger
	// TLSRenewBefore: a server's TLS certificate is renewed (see
	// testdbd.TLSRenewer) once less than this is left of it; 0 means 7
	// days. TLSCheckEvery is how often that is looked at; 0 means an hour.
	TLSRenewBefore time.Duration
	TLSCheckEvery  time.Duration
}

// Fleet starts servers through a provider within a limit, keeps an
// administrative connection pool to each, notices when one dies and removes
// it. It is safe for concurrent use.
type Fleet struct {
	provider testdbd.Provider
	cfg      FleetConfig
	log      *slog.Logger

	mu       sync.Mutex
	servers  []*Member
	starting int
	closed   bool
	wg       sync.WaitGroup
	// starts counts the Starts in progress; closing cancels them (Close
	// waits for them to end and remove what they started).
	starts       sync.WaitGroup
	closing      context.Context
	cancelStarts context.CancelFunc
}

// Member is a running instance with the daemon's administrative connections.
type Member struct {
	testdbd.Instance
	// DB is a pool of administrative connections (multi-statements on).
	DB *sql.DB
	// StatusDB is a small pool of its own for reading server status while
	// DB's connections may all be held by work that waits for the reading.
	StatusDB *sql.DB
	// Flavor is the server's engine flavor.
	Flavor testdbd.Flavor
	// Settings were asked for and read back when the server started.
	Settings []testdbd.Setting
	// Datadir is the server's datadir as the daemon sees it
	// (testdbd.LocalDatadir), "" when it cannot see it. Watch says whether
	// its database directories can be watched for schema changes (see
	// watchable); when not, WatchWhy says why.
	Datadir  string
	Watch    bool
	WatchWhy string

	sizes *sizes // what DatabaseBytes measured, when Datadir is set

	fleet    *Fleet
	stopped  chan struct{} // closed when the fleet stops the server on purpose
	stopOnce sync.Once
}

// NewFleet returns a fleet over provider. It starts nothing.
func NewFleet(provider testdbd.Provider, cfg FleetConfig) *Fleet {
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = 1
	}
	if cfg.AdminConns <= 0 {
		cfg.AdminConns = 16
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TLSRenewBefore <= 0 {
		cfg.TLSRenewBefore = 7 * 24 * time.Hour
	}
	if cfg.TLSCheckEvery <= 0 {
		cfg.TLSCheckEvery = time.Hour
	}
	closing, cancel := context.WithCancel(context.Background())
	return &Fleet{provider: provider, cfg: cfg, log: cfg.Logger, closing: closing, cancelStarts: cancel}
}

// Provider returns the fleet's provider.
func (f *Fleet) Provider() testdbd.Provider { return f.provider }

// MaxInstances returns the limit on running servers.
func (f *Fleet) MaxInstances() int { return f.cfg.MaxInstances }

// Start starts one more server, waits until it answers, opens its admin
// pool and reads its settings back. It fails with EExhausted when
// MaxInstances servers are already running or starting.
func (f *Fleet) Start(ctx context.Context) (*Member, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, testdbd.Errorf(testdbd.EUnavailable, "the daemon is shutting down")
	}
	if len(f.servers)+f.starting >= f.cfg.MaxInstances {
		n := len(f.servers) + f.starting
		f.mu.Unlock()
		return nil, testdbd.Errorf(testdbd.EExhausted,
			"server instance limit reached (%d of --max-instances=%d running or starting)", n, f.cfg.MaxInstances)
	}
	f.starting++
	f.starts.Add(1)
	defer f.starts.Done()
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(f.closing, cancel)()
	s, err := f.start(ctx)
	f.mu.Lock()
	f.starting--
	if err == nil && f.closed {
		err = testdbd.Errorf(testdbd.EUnavailable, "the daemon is shutting down")
		defer func() { _ = s.stop(context.WithoutCancel(ctx)) }()
	} else if err == nil {
		f.servers = append(f.servers, s)
		f.wg.Add(1)
		go f.watch(s)
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (f *Fleet) start(ctx context.Context) (*Member, error) {
	engine := f.provider.Engine()
	inst, err := f.provider.Start(ctx, testdbd.StartOptions{
		Args:           Args(engine, f.cfg.Settings),
		MaxConnections: f.cfg.Settings.MaxConnections,
	})
	if err != nil {
		return nil, err
	}
	s := &Member{Instance: inst, Flavor: engine.Flavor, fleet: f, stopped: make(chan struct{})}
	s.DB, err = OpenAdmin(inst.Admin(), f.cfg.AdminConns)
	if err == nil {
		s.StatusDB, err = OpenAdmin(inst.Admin(), 2)
	}
	if err == nil {
		var st []testdbd.Setting
		if st, err = ReadSettings(ctx, s.DB, engine, f.cfg.Settings); err == nil {
			s.Settings = st
			if bad := testdbd.Mismatched(st); len(bad) > 0 {
				f.log.Warn("server runs with settings other than those asked for", "instance", inst.ID(), "settings", bad)
			}
		}
	}
	if err != nil {
		_ = s.stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("instance %s: %w", inst.ID(), err)
	}
	if ld, ok := inst.(testdbd.LocalDatadir); ok {
		s.Datadir = ld.LocalDatadir()
	}
	if s.Datadir != "" {
		s.sizes = newSizes()
	}
	if s.Watch, s.WatchWhy = watchable(inst.Engine(), s.Datadir); !s.Watch {
		f.log.Info("schema changes will be detected from the server's statement counters", "instance", inst.ID(), "why", s.WatchWhy)
	}
	return s, nil
}

// DatabaseDir returns the directory of database db as the daemon sees it,
// or "" when the datadir cannot be watched. Names are testdbd's own
// (letters, digits, underscores), so they need no encoding.
func (s *Member) DatabaseDir(db string) string {
	if !s.Watch {
		return ""
	}
	return s.Datadir + "/" + db
}

// OpenAdmin opens a pool of administrative connections to e, with
// multi-statements on and parameters interpolated client-side (one round
// trip per statement batch). What they write stays out of the binary log
// (sql_log_bin=0): it is read for what tests do (see BinlogName), and the
// daemon's clones and restores would fill it.
func OpenAdmin(e testdbd.Endpoint, maxConns int) (*sql.DB, error) {
	return open(e, "", maxConns, map[string]string{"sql_log_bin": "0"})
}

// OpenDatabase opens a pool of connections to e, as OpenAdmin does, with
// database as the connections' default database, for an account without
// administrative privileges.
func OpenDatabase(e testdbd.Endpoint, database string, maxConns int) (*sql.DB, error) {
	return open(e, database, maxConns, nil)
}

func open(e testdbd.Endpoint, database string, maxConns int, params map[string]string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.DBName = database
	cfg.ParseTime = true
	if e.Socket != "" {
		cfg.Net, cfg.Addr = "unix", e.Socket
	} else {
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	cfg.User, cfg.Passwd = e.User, e.Password
	cfg.MultiStatements = true
	cfg.InterpolateParams = true
	cfg.Timeout = 5 * time.Second
	cfg.Params = map[string]string{"lock_wait_timeout": "10", "innodb_lock_wait_timeout": "10"}
	maps.Copy(cfg.Params, params)
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// watch waits for a server to exit, renewing its TLS certificate as it
// nears its end meanwhile; if nobody stopped it, it is removed from the
// fleet, its files are cleaned up and OnDeath is told.
func (f *Fleet) watch(s *Member) {
	defer f.wg.Done()
	tick := time.NewTicker(f.cfg.TLSCheckEvery)
	defer tick.Stop()
	for exited := false; !exited; {
		select {
		case <-s.stopped:
			return
		case <-s.Done():
			exited = true
		case <-tick.C:
			f.renewTLS(s)
		}
	}
	select {
	case <-s.stopped:
		return
	default:
	}
	err := s.Err()
	if err == nil {
		err = errors.New("server process exited")
	}
	f.log.Error("server instance died", "instance", s.ID(), "err", err)
	f.remove(s)
	// Tell first (nothing new must go there), then clean up, which can take
	// a while (removing a container).
	if f.cfg.OnDeath != nil {
		f.cfg.OnDeath(s, err)
	}
	s.closeDBs()
	_ = s.Instance.Stop(context.Background())
}

// renewTLS renews the server's TLS certificate when less than
// TLSRenewBefore of it is left, and has the server load the new one. A
// failure is logged and tried again at the next check.
func (f *Fleet) renewTLS(s *Member) {
	r, ok := s.Instance.(testdbd.TLSRenewer)
	if !ok || r.TLSNotAfter().IsZero() || time.Until(r.TLSNotAfter()) > f.cfg.TLSRenewBefore {
		return
	}
	ctx, cancel := context.WithTimeout(f.closing, time.Minute)
	defer cancel()
	reload := "FLUSH SSL"
	if s.Flavor == testdbd.MySQL {
		reload = "ALTER INSTANCE RELOAD TLS"
	}
	err := r.RenewTLS(ctx)
	if err == nil {
		_, err = s.DB.ExecContext(ctx, reload)
	}
	if err != nil && f.closing.Err() != nil {
		return // the daemon is shutting down
	}
	if err != nil {
		f.log.Warn("could not renew the server's TLS certificate; trying again later", "instance", s.ID(),
			"expires", r.TLSNotAfter(), "err", err)
		return
	}
	f.log.Info("renewed the server's TLS certificate", "instance", s.ID(), "expires", r.TLSNotAfter())
}

func (f *Fleet) remove(s *Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.servers {
		if x == s {
			f.servers = append(f.servers[:i], f.servers[i+1:]...)
			return
		}
	}
}

// Starting reports whether servers are being started.
func (f *Fleet) Starting() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starting > 0
}

// Members returns the running instances, oldest first.
func (f *Fleet) Members() []*Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Member(nil), f.servers...)
}

func (s *Member) stop(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopped) })
	s.closeDBs()
	return s.Instance.Stop(ctx)
}

func (s *Member) closeDBs() {
	if s.sizes != nil {
		s.sizes.close()
	}
	for _, db := range []*sql.DB{s.DB, s.StatusDB} {
		if db != nil {
			_ = db.Close()
		}
	}
}

// Close stops every server, all at once, and waits for the watchers to
// finish. Servers still starting are stopped too: their starts are
// canceled, and Close waits, bounded by ctx, until they have removed what
// they started.
func (f *Fleet) Close(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	servers := f.servers
	f.servers = nil
	f.mu.Unlock()
	f.cancelStarts()
	errs := make([]error, len(servers)+1)
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.stop(ctx)
		}()
	}
	started := make(chan struct{})
	go func() { f.starts.Wait(); close(started) }()
	select {
	case <-started:
	case <-ctx.Done():
		errs[len(servers)] = fmt.Errorf("servers still starting: %w", ctx.Err())
	}
	wg.Wait()
	f.wg.Wait()
	return errors.Join(errs...)
}

// Info is the instance's description with the settings read back.
func (s *Member) Info(ctx context.Context) testdbd.InstanceInfo {
	info := s.Instance.Info(ctx)
	info.Settings = s.Settings
	return info
}

// Describe returns the server's description with the number of databases on
// it counted now (system schemas excluded).
func (s *Member) Describe(ctx context.Context) (testdbd.InstanceInfo, int) {
	info := s.Info(ctx)
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.SCHEMATA
		WHERE SCHEMA_NAME NOT IN ('mysql','information_schema','performance_schema','sys')`).Scan(&n)
	if err != nil {
		n = -1
	}
	return info, n
}

// FollowRows starts following the server's binary log for the rows tests
// change (see binlog.Rows), through its administrative endpoint; the
// stream stops when the server does, or at Close.
func (s *Member) FollowRows(log *slog.Logger) *binlog.Rows {
	a := s.Admin()
	addr := a.Socket
	if addr == "" {
		addr = net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	}
	return binlog.StartRows(binlog.RowsConfig{Addr: addr, User: a.User, Password: a.Password, Flavor: string(s.Flavor),
		DB: s.StatusDB, Logger: log, Done: s.Done()})
}
