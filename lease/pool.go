package lease

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

// fillLoop keeps every template's pool at its target: it adds databases
// where ready ones plus those on their way fall short of the target plus
// the waiters, within the capacity limits, a bounded number at a time.
func (m *Manager) fillLoop() {
	defer m.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		m.fill()
		select {
		case <-m.ctx.Done():
			return
		case <-m.kick:
		case <-tick.C:
		}
	}
}

// fill launches the creations the pools need now.
func (m *Manager) fill() {
	if m.cfg.MemoryBudget > 0 {
		m.measureMemory() // refresh the measurement outside the lock
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.retireStaleLocked()
	for _, t := range m.templatesByNeedLocked() {
		m.trimLocked(t)
		for m.jobs < m.cfg.Clones {
			c := t.countsLocked()
			want := t.targetLocked() + len(t.waiters) - c.Ready - c.Creating - c.Resetting
			if want <= 0 {
				t.blocked = ""
				break
			}
			if !m.launchLocked(t) {
				break
			}
		}
	}
}

// trimLocked drops ready databases beyond t's target that have been idle
// for IdleTrim.
func (m *Manager) trimLocked(t *template) {
	surplus := t.countsLocked().Ready - t.targetLocked()
	if surplus <= 0 || len(t.waiters) > 0 {
		return
	}
	for _, db := range append([]*workerDB(nil), t.dbs...) {
		if surplus == 0 {
			break
		}
		if db.state == dbReady && time.Since(db.readySince) >= m.cfg.IdleTrim {
			m.dropDBLocked(db, "idle beyond the pool's target")
			surplus--
		}
	}
}

// templatesByNeedLocked returns the ready templates, those with waiters first.
func (m *Manager) templatesByNeedLocked() []*template {
	var first, rest []*template
	for _, t := range m.liveLocked() {
		if t.state != templates.Ready || t.backingOffLocked() {
			continue
		}
		if len(t.waiters) > 0 {
			first = append(first, t)
		} else {
			rest = append(rest, t)
		}
	}
	return append(first, rest...)
}

// launchLocked starts one step towards another database of t: a clone on a
// server holding a replica, a new replica on a server with room, or a new
// server. It returns true when it started a clone, false otherwise: it
// started a replica or a server, which a later fill clones on, or one is on
// its way, or the limits allow none (and then t.blocked says why).
func (m *Manager) launchLocked(t *template) bool {
	tables := t.tablesLocked()
	if !m.roomForDBLocked(t, tables) {
		return false
	}
	if rep := m.replicaWithRoomLocked(t, tables); rep != nil {
		m.startCreateLocked(t, rep)
		return true
	}
	if len(t.building) > 0 {
		return false // a replica is on its way
	}
	if st := m.hostForReplicaLocked(t, tables); st != nil {
		m.startReplicaLocked(t, st)
		return false
	}
	m.addServerLocked(t)
	return false
}

// roomForDBLocked reports whether the daemon-wide limits (--max-databases,
// the memory budget) allow another database of t with tables tables,
// evicting an idle database of another template when that makes room. When
// they do not, it records why in t.blocked.
func (m *Manager) roomForDBLocked(t *template, tables int) bool {
	if m.dbTotal >= m.cfg.MaxDatabases {
		if !m.evictIdleLocked(t) {
			t.blocked = fmt.Sprintf("--max-databases=%d reached (%d worker databases exist)", m.cfg.MaxDatabases, m.dbTotal)
			return false
		}
	}
	if reason := m.memoryBlocksLocked(int64(tables) * tableEstimate); reason != "" {
		if !m.evictIdleLocked(t) {
			t.blocked = reason
			return false
		}
	}
	return true
}

// replicaWithRoomLocked returns a replica of t on a live server with room
// for another database of tables tables, or nil.
func (m *Manager) replicaWithRoomLocked(t *template, tables int) *replica {
	for _, rep := range t.replicas {
		st := rep.host
		if !st.dead && st.dbs < m.cfg.MaxDBsPerInstance && st.tables+tables <= st.tableBudget() {
			return rep
		}
	}
	return nil
}

// hostForReplicaLocked returns a live server of t's engine with no replica
// of t and room for one and a database (twice tables tables), or nil.
func (m *Manager) hostForReplicaLocked(t *template, tables int) *host {
	for _, st := range m.hosts {
		if !st.dead && st.Engine() == t.engine && t.replicas[st.ID()] == nil && st.dbs < m.cfg.MaxDBsPerInstance && st.tables+2*tables <= st.tableBudget() {
			return st
		}
	}
	return nil
}

// addServerLocked starts another server of t's fleet in the background,
// unless one is starting already or the fleet's size or the memory budget
// forbids it (then t.blocked says which).
func (m *Manager) addServerLocked(t *template) {
	f := t.fleet
	if m.starting[f] > 0 {
		return
	}
	running := len(f.Members())
	if running >= f.MaxInstances() {
		t.blocked = fmt.Sprintf("every %s server is full (--max-databases-per-instance=%d, or its table budget) and --max-instances=%d servers of it run",
			f.Provider().Engine(), m.cfg.MaxDBsPerInstance, f.MaxInstances())
		return
	}
	if reason := m.memoryBlocksLocked(instanceEstimate); reason != "" {
		t.blocked = "no room for another server: " + reason
		return
	}
	m.starting[f]++
	m.goBackground(func(ctx context.Context) {
		_, err := m.startServer(ctx, f)
		m.mu.Lock()
		m.starting[f]--
		if err != nil {
			t.blocked = "starting another server failed: " + err.Error()
		}
		m.mu.Unlock()
		if err != nil && !isCanceled(err) && ctx.Err() == nil {
			m.log.Error("start server", "err", err)
			m.event("error", "instance_start_failed", "starting another server failed: "+err.Error(), t.name, "", "", "")
			pause(ctx, time.Second) // do not spin on a server that cannot start
		}
		m.kickFill()
	})
}

func (t *template) tablesLocked() int {
	for _, rep := range t.replicas {
		return len(rep.schema.Tables)
	}
	return 0
}

func (m *Manager) startCreateLocked(t *template, rep *replica) {
	m.jobs++
	db := m.registerDBLocked(t, rep)
	m.goBackground(func(ctx context.Context) {
		err := m.createDB(ctx, db)
		m.mu.Lock()
		m.jobs--
		m.mu.Unlock()
		if err != nil && !isCanceled(err) {
			m.log.Error("create worker database", "template", t.name, "err", err)
			m.event("error", "clone_failed", err.Error(), t.name, "", rep.host.ID(), db.name)
			pause(ctx, 100*time.Millisecond)
		}
		m.kickFill()
	})
}

func (m *Manager) startReplicaLocked(t *template, st *host) {
	t.building[st.ID()] = true
	m.jobs++
	m.goBackground(func(context.Context) {
		ctx := t.ctx
		var err error
		if ctx.Err() == nil { // else retired, or the daemon is shutting down, since
			m.log.Info("building a template replica", "template", t.name, "instance", st.ID())
			_, err = m.buildReplica(ctx, t, st, false)
		}
		// A build stopped because t was retired or the daemon is shutting
		// down is no trouble of t's.
		failed := err != nil && !isCanceled(err) && ctx.Err() == nil
		m.mu.Lock()
		m.jobs--
		delete(t.building, st.ID())
		if failed {
			t.blocked = fmt.Sprintf("building the template on instance %s failed: %v", st.ID(), err)
			m.troubleLocked(t, nil, err)
		}
		m.reapLocked(t)
		m.mu.Unlock()
		if failed {
			m.log.Error("build template replica", "template", t.name, "instance", st.ID(), "err", err)
			m.event("error", "clone_failed", "building the template database failed: "+err.Error(), t.name, "", st.ID(), "")
			pause(ctx, time.Second)
		}
		m.kickFill()
	})
}

// evictIdleLocked makes room for t by dropping a ready database of another
// template that has more ready databases than waiters.
func (m *Manager) evictIdleLocked(t *template) bool {
	if len(t.waiters) == 0 {
		return false
	}
	var victim *workerDB
	most := 0
	for _, other := range m.liveLocked() {
		if other == t {
			continue
		}
		c := other.countsLocked()
		if c.Ready > most && c.Ready > len(other.waiters) {
			for _, db := range other.dbs {
				if db.state == dbReady {
					victim, most = db, c.Ready
					break
				}
			}
		}
	}
	if victim == nil {
		return false
	}
	m.log.Info("dropping an idle database to make room", "template", victim.tpl.name, "database", victim.name, "for", t.name)
	m.dropDBLocked(victim, "room for template "+t.name)
	return true
}

// registerDBLocked counts a new worker database of t on rep's server, in
// state creating, before it is made (so that limits see it at once).
func (m *Manager) registerDBLocked(t *template, rep *replica) *workerDB {
	db := &workerDB{name: fmt.Sprintf("tdb_%s_w%d", templates.Short(t.hash), m.nextSeq()), tpl: t, rep: rep,
		state: dbCreating, op: make(chan struct{}, 1)}
	t.dbs = append(t.dbs, db)
	rep.host.dbs++
	rep.host.tables += len(rep.schema.Tables)
	m.dbTotal++
	return db
}

// cloneHook, set only by tests, makes creating a worker database fail
// with the error it returns.
var cloneHook atomic.Pointer[func(database string) error]

// createDB clones a registered worker database from its replica, gives it a
// fresh user and a baseline, and puts it in the pool.
func (m *Manager) createDB(ctx context.Context, db *workerDB) error {
	rep := db.rep
	st := rep.host
	var err error
	if hook := cloneHook.Load(); hook != nil {
		err = (*hook)(db.name)
	}
	var owner accounts.Account
	if err == nil {
		owner, err = accounts.CreateOwner(ctx, st.DB, "tdbo_", db.name)
	}
	if err == nil {
		db.owner = owner.User
		err = rep.schema.Clone(ctx, st.DB, st.ddl, db.name, db.owner)
		// A deadlock with another clone or reset on the tables the server
		// shares (statistics): the clone dropped what it made; again.
		for attempt := 0; err != nil && attempt < 3 && strategies.Retryable(err); attempt++ {
			pause(ctx, time.Duration(1+attempt)*5*time.Millisecond)
			err = rep.schema.Clone(ctx, st.DB, st.ddl, db.name, db.owner)
		}
	}
	if err == nil && st.rows != nil {
		// Before the baseline: from here on, whatever writes to it shows.
		st.rows.Track(db.name, rep.schema.Tables)
	}
	if err == nil {
		db.baseline, err = strategies.TakeBaseline(ctx, st.StatusDB, st.Flavor, st.ddl, db.name, st.DatabaseDir(db.name), st.binlog)
	}
	if err == nil {
		err = m.prepareUser(ctx, db)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.dead {
		return nil // the death handler forgot it already
	}
	if err != nil {
		m.removeDBLocked(db)
		if !isCanceled(err) {
			m.dropDatabase(st, db.name, "creating it failed", db.user, db.owner)
			m.troubleLocked(db.tpl, rep, err)
		}
		m.reapLocked(db.tpl)
		return fmt.Errorf("create %s: %w", db.name, err)
	}
	db.tpl.healthyLocked()
	m.makeReadyLocked(db)
	return nil
}

// prepareUser makes the MySQL account the next lease of db gets: a new
// one (accounts.Create) for a new database, or, for a database whose last
// lease's account revokeUser locked, the same account with a new password
// (accounts.Rotate). On MySQL it logs in with it once (see below).
func (m *Manager) prepareUser(ctx context.Context, db *workerDB) error {
	h := db.rep.host
	var a accounts.Account
	var err error
	if db.user != "" {
		a, err = accounts.Rotate(ctx, h.DB, db.user, db.name, m.cfg.LeaseConnections)
	} else {
		a, err = accounts.Create(ctx, h.DB, "tdbu_", db.name, m.cfg.LeaseConnections)
	}
	if err != nil {
		return err
	}
	db.user = a.User
	if h.Flavor == testdbd.MySQL {
		// caching_sha2_password: the first login after a password change
		// needs TLS or an RSA key exchange, which clients over plain TCP
		// may not do; once the daemon has logged in, theirs take the fast
		// path. MariaDB keeps no such cache.
		host, port := h.ClientAddr()
		if err := accounts.Login(ctx, host, port, a); err != nil {
			return err
		}
	}
	db.password = a.Password
	return nil
}

// revokeUser locks db's current account and ends its sessions: its
// credentials stop working before anything else happens to the database.
// The account stays, locked, for prepareUser to give the next lease with a
// new password; whoever drops the database drops it (db.user).
func (m *Manager) revokeUser(ctx context.Context, db *workerDB) (int, error) {
	if db.user == "" {
		return 0, nil
	}
	h := db.rep.host
	conn, err := h.DB.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	db.password = ""
	return accounts.EndSessions(ctx, conn, h.Flavor, db.user, true)
}

// makeReadyLocked puts a clean database in the pool, or hands it straight
// to the first waiter.
func (m *Manager) makeReadyLocked(db *workerDB) {
	t := db.tpl
	db.state, db.lease, db.readySince = dbReady, nil, time.Now()
	if t.retired || m.closed {
		if t.retired {
			m.reapLocked(t)
		}
		return
	}
	for len(t.waiters) > 0 {
		w := t.waiters[0]
		t.waiters = t.waiters[1:]
		select {
		case w.ch <- db:
			db.state = dbLeased
			return
		default:
		}
	}
	m.poolChangedLocked(t)
}

// removeDBLocked forgets a database (already dropped or never made).
func (m *Manager) removeDBLocked(db *workerDB) {
	t := db.tpl
	for i, x := range t.dbs {
		if x == db {
			t.dbs = append(t.dbs[:i], t.dbs[i+1:]...)
			db.rep.host.dbs--
			db.rep.host.tables -= len(db.rep.schema.Tables)
			m.dbTotal--
			break
		}
	}
	m.poolChangedLocked(t)
}

// dropDBLocked removes db from its pool and drops it (and its user) in the
// background.
func (m *Manager) dropDBLocked(db *workerDB, why string) {
	m.removeDBLocked(db)
	m.dropDatabase(db.rep.host, db.name, why, db.user, db.owner)
}

// dropDatabase drops database name on st and the accounts given (its
// lease's user, its owner), in the background; nothing when st is dead.
// The XA transactions a test left prepared in it are rolled back first
// (their locks would stop the drop). A drop that fails is tried again a
// few times (dropRetries), so that no database stays behind.
func (m *Manager) dropDatabase(st *host, name, why string, users ...string) {
	if st.dead {
		return
	}
	m.goBackground(func(ctx context.Context) { m.dropDatabaseNow(ctx, st, name, why, users...) })
}

// dropDatabaseNow is dropDatabase's work, done before it returns.
func (m *Manager) dropDatabaseNow(ctx context.Context, st *host, name, why string, users ...string) {
	for _, u := range users {
		if u != "" {
			_ = accounts.Drop(ctx, st.DB, u)
		}
	}
	for attempt := 0; ; attempt++ {
		err := m.dropOnce(ctx, st, name)
		if err == nil || isCanceled(err) || m.hostDead(st) {
			return
		}
		if attempt == len(dropRetries) {
			m.log.Error("drop database: giving up; it stays on the server until the server stops", "database", name, "why", why, "err", err)
			return
		}
		m.log.Warn("drop database; trying again", "database", name, "why", why, "in", dropRetries[attempt], "err", err)
		pause(ctx, dropRetries[attempt])
	}
}

// dropRetries are the pauses before the drop of a database is tried again.
var dropRetries = []time.Duration{time.Second, 10 * time.Second, time.Minute}

func (m *Manager) dropOnce(ctx context.Context, st *host, name string) error {
	if st.rows != nil {
		st.rows.Untrack(name)
	}
	if st.binlog != nil {
		if _, _, err := st.binlog.RollBackXA(ctx, st.DB, name); err != nil {
			return err
		}
	}
	if err := schema.Drop(ctx, st.DB, st.ddl, name); err != nil {
		return strategies.ExplainLockWait(ctx, st.DB, err)
	}
	return nil
}

// lock takes db's operation lock, bounded by ctx.
func (db *workerDB) lock(ctx context.Context) error {
	select {
	case db.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return testdbd.Errorf(testdbd.ETimeout, "database %s is busy with another reset: %v", db.name, ctx.Err())
	}
}

func (db *workerDB) unlock() { <-db.op }

// poolChangedLocked publishes t's pool counts to the metrics.
func (m *Manager) poolChangedLocked(t *template) {
	c := t.countsLocked()
	m.stats.Pool(t.name, map[string]int{dbReady: c.Ready, dbLeased: c.Leased, dbResetting: c.Resetting, dbCreating: c.Creating})
}
