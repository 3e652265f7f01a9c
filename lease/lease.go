package lease

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/stats"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

// resetTimeout bounds one reset.
const resetTimeout = 5 * time.Minute

// maxEnded is how many ended leases are remembered for clear errors.
const maxEnded = 10000

// lease is exclusive use of one worker database.
type lease struct {
	id       string
	tpl      *template
	db       *workerDB
	strategy testdbd.Strategy
	worker   string
	user     string
	password string
	ttl      time.Duration
	acquired time.Time
	expires  time.Time
	waited   time.Duration
	state    string
	why      string // why it ended, when it did
	resets   int64
	maxConns int  // the account's MAX_USER_CONNECTIONS
	keepAI   bool // resets leave AUTO_INCREMENT where the tests moved it
	timer    *time.Timer
}

// Acquire leases a ready worker database of a template. With none ready it
// waits, in FIFO order with other callers, up to the wait timeout, then
// fails with EExhausted naming the limit that keeps a database from being
// made.
func (m *Manager) Acquire(ctx context.Context, req AcquireRequest) (LeaseInfo, error) {
	start := time.Now()
	terms, err := m.checkAcquire(req)
	if err != nil {
		return LeaseInfo{}, err
	}
	t, err := m.readyBuild(ctx, req.Template, req.TemplateHash, terms.wait)
	if err != nil {
		return LeaseInfo{}, err
	}
	// The wait for the build counts against the wait for a database.
	wait := terms.wait - time.Since(start)
	t.used = time.Now()
	if db := t.pickReadyLocked(req.Worker); db != nil {
		info, err := m.grantLocked(ctx, t, db, req, terms, 0)
		if err != nil {
			return LeaseInfo{}, err
		}
		m.stats.Acquired(time.Since(start), 0)
		return info, nil
	}
	if why := t.troubledLocked(); why != "" && time.Until(t.health.retryAt) >= wait {
		// No database can come within the wait: say why now. (With an
		// attempt due sooner, the acquire waits for it: a success hands it
		// a database, a failure the reason.)
		m.mu.Unlock()
		return LeaseInfo{}, testdbd.Errorf(testdbd.EUnavailable, "%s; acquire again later", why)
	}
	db, err := m.awaitDB(ctx, t, req, wait)
	if err != nil {
		return LeaseInfo{}, err
	}
	waited := time.Since(start)
	info, err := m.grantLocked(ctx, t, db, req, terms, waited)
	if err != nil {
		return LeaseInfo{}, err
	}
	m.stats.Acquired(waited, waited)
	return info, nil
}

// acquireTerms are what an acquire asked for, with the daemon's defaults
// in place of what it left out.
type acquireTerms struct {
	strategy  testdbd.Strategy
	ttl, wait time.Duration
	conns     int // the account's MAX_USER_CONNECTIONS
}

// checkAcquire checks an acquire's request against the daemon's limits and
// returns its terms.
func (m *Manager) checkAcquire(req AcquireRequest) (acquireTerms, error) {
	if req.Strategy == testdbd.StrategyUnspecified {
		return acquireTerms{}, testdbd.Errorf(testdbd.EInvalid, "no reset strategy: name one of truncate, snapshot or rollback")
	}
	ttl, wait := req.TTL, req.WaitTimeout
	if ttl == 0 {
		ttl = m.cfg.DefaultTTL
	}
	if wait == 0 {
		wait = m.cfg.DefaultWait
	}
	switch {
	case ttl < time.Second || ttl > m.cfg.MaxTTL:
		return acquireTerms{}, testdbd.Errorf(testdbd.EInvalid, "ttl_seconds %d: use 1 to %d (0 means %d)",
			int(ttl.Seconds()), int(m.cfg.MaxTTL.Seconds()), int(m.cfg.DefaultTTL.Seconds()))
	case wait < 0 || wait > m.cfg.MaxWait:
		return acquireTerms{}, testdbd.Errorf(testdbd.EInvalid, "wait_timeout_ms %d: use 0 (%d) up to %d",
			wait.Milliseconds(), m.cfg.DefaultWait.Milliseconds(), m.cfg.MaxWait.Milliseconds())
	case len(req.Worker) > 128:
		return acquireTerms{}, testdbd.Errorf(testdbd.EInvalid, "worker key of %d bytes is longer than 128", len(req.Worker))
	case req.MaxConnections < 0 || req.MaxConnections > m.cfg.MaxLeaseConnections:
		return acquireTerms{}, testdbd.Errorf(testdbd.EInvalid, "max_connections %d: use 0 (the default, %d) up to %d (--max-lease-connections)",
			req.MaxConnections, m.cfg.LeaseConnections, m.cfg.MaxLeaseConnections)
	}
	conns := req.MaxConnections
	if conns == 0 {
		conns = m.cfg.LeaseConnections
	}
	return acquireTerms{strategy: req.Strategy, ttl: ttl, wait: wait, conns: conns}, nil
}

// grantLocked leases db of t to the acquire req on its terms, recording
// how long it waited for the database (0: not at all), unlocks m.mu and
// caps the lease's connections.
func (m *Manager) grantLocked(ctx context.Context, t *template, db *workerDB, req AcquireRequest, terms acquireTerms, waited time.Duration) (LeaseInfo, error) {
	l := m.newLeaseLocked(t, db, req.Worker, terms.strategy, terms.ttl, waited, terms.conns)
	l.keepAI = req.KeepAutoIncrement
	info := m.leaseInfoLocked(l)
	m.mu.Unlock()
	if err := m.capConnections(ctx, l); err != nil {
		return LeaseInfo{}, err
	}
	return info, nil
}

// awaitDB queues the acquire, with m.mu held, behind t's other waiters and
// waits up to wait for a database. It returns the database with m.mu still
// held (or held again), or the reason it has none with m.mu unlocked.
func (m *Manager) awaitDB(ctx context.Context, t *template, req AcquireRequest, wait time.Duration) (*workerDB, error) {
	w := &waiter{worker: req.Worker, ch: make(chan *workerDB, 1), gone: make(chan struct{})}
	t.waiters = append(t.waiters, w)
	ahead := len(t.waiters) - 1
	m.kickFill()
	m.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var db *workerDB
	var failure error
	select {
	case db = <-w.ch:
	case <-w.gone:
		failure = testdbd.Errorf(testdbd.EUnavailable, "%s; acquire again", w.reason)
	case <-timer.C:
		failure = m.exhausted(t, ahead, wait)
	case <-ctx.Done():
		failure = testdbd.Errorf(testdbd.ETimeout, "gave up waiting for a database of %s: %v", req.Template, ctx.Err())
	}
	m.mu.Lock()
	if db == nil {
		// Handed a database while giving up? After a timeout, take it after
		// all; a caller that is gone gets nothing, and it goes back.
		select {
		case db = <-w.ch:
			if ctx.Err() != nil || failure != nil && testdbd.ErrorCode(failure) != testdbd.EExhausted {
				m.makeReadyLocked(db)
				db = nil
			}
		default:
		}
	}
	if db == nil {
		t.removeWaiterLocked(w)
		m.mu.Unlock()
		if testdbd.ErrorCode(failure) == testdbd.EExhausted {
			m.stats.Exhausted()
		}
		return nil, failure
	}
	return db, nil
}

// readyBuild returns, locked, the build of name that hash names (the
// current one when hash is empty), waiting up to wait for it while it is
// being built.
func (m *Manager) readyBuild(ctx context.Context, name, hash string, wait time.Duration) (*template, error) {
	deadline := time.Now().Add(wait)
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, errClosed
		}
		t, err := m.resolveLocked(name, hash)
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		switch t.state {
		case templates.Ready:
			return t, nil
		case templates.Failed:
			err := t.err
			m.mu.Unlock()
			return nil, testdbd.Errorf(testdbd.EConflict, "template %s failed to build: %v; fix the migrations and call EnsureTemplate again", name, err)
		}
		done := t.done
		m.mu.Unlock()
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-done:
			timer.Stop()
		case <-m.ctx.Done():
			timer.Stop()
			return nil, errClosed
		case <-timer.C:
			return nil, testdbd.Errorf(testdbd.EUnavailable,
				"template %s is still building after the acquire waited %s for it: wait for the build (testdbd template wait %s), then acquire, or pass a longer wait_timeout_ms", name, wait.Round(time.Millisecond), name)
		case <-ctx.Done():
			timer.Stop()
			return nil, testdbd.Errorf(testdbd.ETimeout, "gave up waiting for template %s to build: %v", name, ctx.Err())
		}
	}
}

// capConnections gives the lease's account the connection cap its request
// asked for, when it is not the default every account is created with. On
// failure the lease ends.
func (m *Manager) capConnections(ctx context.Context, l *lease) error {
	if l.maxConns == m.cfg.LeaseConnections {
		return nil
	}
	err := accounts.SetMaxConnections(ctx, l.db.rep.host.DB, l.user, l.maxConns)
	if err != nil {
		m.mu.Lock()
		m.endLeaseLocked(l, LeaseReleased, "its connection cap could not be set: "+err.Error())
		m.mu.Unlock()
	}
	return err
}

// exhausted builds the error for an acquire that waited in vain.
func (m *Manager) exhausted(t *template, ahead int, wait time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := t.countsLocked()
	why := t.blocked
	if why == "" {
		why = fmt.Sprintf("all %d databases of the template are leased or being reset", c.Leased+c.Resetting)
	}
	return testdbd.Errorf(testdbd.EExhausted,
		"no database of template %s became free within %d ms: %s; %d leased, %d resetting, %d creating, %d requests were waiting ahead of this one. Release leases, raise the limit, or wait longer (wait_timeout_ms)",
		t.name, wait.Milliseconds(), why, c.Leased, c.Resetting, c.Creating, ahead)
}

// pickReadyLocked takes a ready database: the worker's previous one when it
// is free, else one no other worker used last, else the least recently used.
func (t *template) pickReadyLocked(worker string) *workerDB {
	var best *workerDB
	for _, db := range t.dbs {
		if db.state != dbReady {
			continue
		}
		if worker != "" && db.lastWorker == worker {
			return db
		}
		switch {
		case best == nil:
			best = db
		case (best.lastWorker != "") != (db.lastWorker != ""):
			if db.lastWorker == "" {
				best = db
			}
		case db.lastUsed.Before(best.lastUsed):
			best = db
		}
	}
	return best
}

func (t *template) removeWaiterLocked(w *waiter) {
	for i, x := range t.waiters {
		if x == w {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			return
		}
	}
}

func (m *Manager) newLeaseLocked(t *template, db *workerDB, worker string, s testdbd.Strategy, ttl, waited time.Duration, conns int) *lease {
	now := time.Now()
	l := &lease{id: "l-" + random.Hex(8), tpl: t, db: db, strategy: s, worker: worker, user: db.user, password: db.password,
		ttl: ttl, acquired: now, expires: now.Add(ttl), waited: waited, state: LeaseActive, maxConns: conns}
	db.state, db.lease, db.lastUsed = dbLeased, l, now
	if worker != "" {
		db.lastWorker = worker
	}
	m.leases[l.id] = l
	m.recordLocked("+", l.id)
	id := l.id
	l.timer = time.AfterFunc(ttl, func() { m.expire(id) })
	m.poolChangedLocked(t)
	return l
}

// Get returns a lease.
func (m *Manager) Get(id string) (LeaseInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.leases[id]; l != nil {
		return m.leaseInfoLocked(l), nil
	}
	if l := m.ended[id]; l != nil {
		return m.leaseInfoLocked(l), nil
	}
	if l, ok := m.lost[id]; ok {
		return l.info(id), nil
	}
	return LeaseInfo{}, notFoundLease(id)
}

// List returns the active leases, of one template if template is not empty.
func (m *Manager) List(template string) []LeaseInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []LeaseInfo{}
	for _, l := range m.leases {
		if template == "" || l.tpl.name == template {
			out = append(out, m.leaseInfoLocked(l))
		}
	}
	return out
}

// Renew extends an active lease's time to live from now (0: its own TTL).
func (m *Manager) Renew(id string, ttl time.Duration) (LeaseInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, err := m.activeLocked(id)
	if err != nil {
		return LeaseInfo{}, err
	}
	if ttl == 0 {
		ttl = l.ttl
	}
	if ttl < time.Second || ttl > m.cfg.MaxTTL {
		return LeaseInfo{}, testdbd.Errorf(testdbd.EInvalid, "ttl_seconds %d: use 1 to %d", int(ttl.Seconds()), int(m.cfg.MaxTTL.Seconds()))
	}
	l.ttl, l.expires = ttl, time.Now().Add(ttl)
	l.timer.Reset(ttl)
	return m.leaseInfoLocked(l), nil
}

// Reset resets the lease's database now, by the lease's strategy unless
// another is given, and returns the report.
func (m *Manager) Reset(ctx context.Context, id string, s testdbd.Strategy) (testdbd.ResetReport, error) {
	m.mu.Lock()
	l, err := m.activeLocked(id)
	if err != nil {
		m.mu.Unlock()
		return testdbd.ResetReport{}, err
	}
	if s == testdbd.StrategyUnspecified {
		s = l.strategy
	}
	db := l.db
	m.mu.Unlock()
	if err := db.lock(ctx); err != nil {
		return testdbd.ResetReport{}, err
	}
	defer db.unlock()
	m.mu.Lock()
	if l.state != LeaseActive { // ended while we waited for the lock
		m.mu.Unlock()
		return testdbd.ResetReport{}, m.endedError(l)
	}
	target := m.targetLocked(db, l.user, s)
	target.KeepAutoIncrement = l.keepAI
	m.mu.Unlock()
	// A reset runs to its end even if the caller goes away: a batch canceled
	// on the client keeps running on the server, beside the next reset.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resetTimeout)
	defer cancel()
	rep, err := m.runReset(rctx, db, target, id, "reset")
	rep.LeaseID = id
	if err != nil {
		// A lease failed during its reset (for space, say) lost its
		// database under it: say why, not what the reset then hit.
		m.mu.Lock()
		ended := l.state != LeaseActive
		m.mu.Unlock()
		if ended {
			return rep, m.endedError(l)
		}
		return rep, err
	}
	m.mu.Lock()
	l.resets++
	m.mu.Unlock()
	return rep, nil
}

// Release ends a lease at once. In the background (recycle) its MySQL
// account is then locked and its sessions ended, its database reset, and
// the same account given a new password and unlocked for the database's
// next lease; the account is dropped only with its database. Releasing a
// lease that has ended already returns its final state.
func (m *Manager) Release(id string) (LeaseInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[id]
	if l == nil {
		// Releasing a lease that already ended (released, expired, failed)
		// is harmless: cleanup code releases whatever happened, and gets the
		// lease's final state.
		if e := m.ended[id]; e != nil {
			return m.leaseInfoLocked(e), nil
		}
		if l, ok := m.lost[id]; ok {
			return l.info(id), nil
		}
		return LeaseInfo{}, notFoundLease(id)
	}
	m.endLeaseLocked(l, LeaseReleased, "released at "+time.Now().UTC().Format(time.RFC3339))
	return m.leaseInfoLocked(l), nil
}

// expire ends a lease whose TTL ran out.
func (m *Manager) expire(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.leases[id]
	if l == nil || time.Now().Before(l.expires) {
		return // renewed in the meantime, or already ended
	}
	m.log.Warn("lease expired", "lease", id, "template", l.tpl.name, "database", l.db.name, "ttl", l.ttl)
	m.event("warning", "lease_expired", fmt.Sprintf("lease %s expired after its TTL of %v: renew leases before their TTL runs out", id, l.ttl),
		l.tpl.name, id, l.db.rep.host.ID(), l.db.name)
	m.stats.Expired()
	m.endLeaseLocked(l, LeaseExpired, fmt.Sprintf("expired at %s after its TTL of %v", l.expires.UTC().Format(time.RFC3339), l.ttl))
}

// endLeaseLocked ends a lease and, unless it failed or its server is dead,
// recycles its database in the background: lock the account and end its
// sessions, reset, new password, pool.
func (m *Manager) endLeaseLocked(l *lease, state, why string) {
	if l.state != LeaseActive {
		return
	}
	l.state, l.why = state, why
	if l.timer != nil {
		l.timer.Stop()
	}
	delete(m.leases, l.id)
	m.recordLocked("-", l.id)
	m.ended[l.id] = l
	m.endedFIFO = append(m.endedFIFO, l.id)
	if len(m.endedFIFO) > maxEnded {
		delete(m.ended, m.endedFIFO[0])
		m.endedFIFO = m.endedFIFO[1:]
	}
	db := l.db
	db.lease = nil
	if state == LeaseFailed || db.rep.host.dead {
		return
	}
	db.state = dbResetting
	m.poolChangedLocked(l.tpl)
	strategy := l.strategy
	trigger := "release"
	if state == LeaseExpired {
		trigger = "expiry"
	}
	id := l.id
	m.goBackground(func(ctx context.Context) { m.recycle(ctx, db, strategy, id, trigger) })
}

// recycle makes a used database clean for the next lease.
func (m *Manager) recycle(ctx context.Context, db *workerDB, s testdbd.Strategy, leaseID, trigger string) {
	if err := db.lock(ctx); err != nil {
		return
	}
	defer db.unlock()
	t0 := time.Now()
	_, err := m.revokeUser(ctx, db)
	t1 := time.Now()
	// A database whose files grew far past its template's is made again
	// rather than reset: a reset would give back its rows, not its size.
	big := err == nil && m.tooBig(db)
	var rep testdbd.ResetReport
	if err == nil && !big {
		m.mu.Lock()
		target := m.targetLocked(db, "", s)
		m.mu.Unlock()
		rep, err = m.runReset(ctx, db, target, leaseID, trigger)
	}
	t2 := time.Now()
	if err == nil && !big {
		err = m.prepareUser(ctx, db)
	}
	m.log.Debug("recycled", "database", db.name, "revoke", t1.Sub(t0), "reset", t2.Sub(t1),
		"detect", rep.Phases.Detect, "restore", rep.Phases.Restore, "new_user", time.Since(t2), "big", big, "err", err)
	m.mu.Lock()
	defer m.mu.Unlock()
	if db.rep.host.dead {
		return
	}
	if err != nil {
		if !isCanceled(err) {
			m.log.Error("recycle worker database; dropping it", "database", db.name, "err", err)
			m.event("error", "recycle_failed", "recycling "+db.name+" failed; it was dropped and a new one is made: "+err.Error(),
				db.tpl.name, leaseID, db.rep.host.ID(), db.name)
		}
		m.dropDBLocked(db, "recycle failed")
		m.reapLocked(db.tpl)
		m.kickFill()
		return
	}
	if rep.FallbackReason != "" {
		m.log.Info("reset fell back", "database", db.name, "reason", rep.FallbackReason)
	}
	if big {
		m.dropDBLocked(db, "it grew far past its template's size; a new one is made")
		m.reapLocked(db.tpl)
		m.kickFill()
		return
	}
	m.makeReadyLocked(db)
}

// targetLocked describes db for a reset.
func (m *Manager) targetLocked(db *workerDB, user string, s testdbd.Strategy) strategies.Target {
	st := db.rep.host
	return strategies.Target{DB: st.DB, StatusDB: st.StatusDB, Flavor: st.Flavor, DDL: st.ddl, Schema: db.rep.schema,
		Database: db.name, User: user, Baseline: db.baseline, Untrusted: st.untrusted(), Strategy: s, Dir: st.DatabaseDir(db.name), Owner: db.owner, Binlog: st.binlog, Rows: st.rows}
}

// runReset runs one reset, records its baseline and metrics. db's operation
// lock must be held.
func (m *Manager) runReset(ctx context.Context, db *workerDB, target strategies.Target, leaseID, trigger string) (rep testdbd.ResetReport, err error) {
	if err := db.rep.host.resets.Acquire(ctx, 1); err != nil {
		return rep, fmt.Errorf("waiting for a turn to reset on server instance %s: %w", db.rep.host.ID(), err)
	}
	rep, base, err := strategies.Reset(ctx, target)
	db.rep.host.resets.Release(1)
	m.mu.Lock()
	db.baseline = base // nil after a failure: the next reset checks everything
	rep.XARolledBack, db.xaEnded = append(db.xaEnded, rep.XARolledBack...), nil
	m.mu.Unlock()
	m.stats.Reset(rep, err)
	defer func() {
		rep.LeaseID = leaseID
		e := stats.ResetEvent{Template: db.tpl.name, InstanceID: db.rep.host.ID(), Trigger: trigger, Report: rep}
		if err != nil {
			e.Err = err.Error()
			m.event("error", "reset_failed", err.Error(), db.tpl.name, leaseID, db.rep.host.ID(), db.name)
		}
		m.stats.RecordReset(e)
	}()
	if err != nil {
		st := db.rep.host
		m.mu.Lock()
		dead, deathErr := st.dead, st.deathErr
		m.mu.Unlock()
		if dead {
			return rep, testdbd.Errorf(testdbd.EUnavailable, "server instance %s died (%v): acquire a new lease", st.ID(), deathErr)
		}
		if templateBroken(err, db.rep.db) || db.rep.broken {
			m.mu.Lock()
			if !db.rep.broken {
				m.troubleLocked(db.tpl, db.rep, err)
			}
			m.mu.Unlock()
			return rep, brokenReplicaError(db.tpl)
		}
		return rep, testdbd.Wrapf(err, "reset of %s failed", db.name)
	}
	return rep, nil
}

// activeLocked returns an active lease or an error that says what became of it.
func (m *Manager) activeLocked(id string) (*lease, error) {
	if l := m.leases[id]; l != nil {
		return l, nil
	}
	if l := m.ended[id]; l != nil {
		return nil, m.endedError(l)
	}
	if l, ok := m.lost[id]; ok {
		return nil, l.err(id)
	}
	return nil, notFoundLease(id)
}

func (m *Manager) endedError(l *lease) error {
	switch l.state {
	case LeaseExpired:
		return testdbd.Errorf(testdbd.EConflict, "lease %s %s", l.id, endedReason(l))
	case LeaseFailed:
		return testdbd.Errorf(testdbd.EUnavailable, "lease %s ended: %s", l.id, endedReason(l))
	}
	return testdbd.Errorf(testdbd.EConflict, "lease %s ended: %s", l.id, endedReason(l))
}

// endedReason says why an ended lease ended and what to do; "" for an
// active one.
func endedReason(l *lease) string {
	switch l.state {
	case LeaseActive:
		return ""
	case LeaseExpired:
		return l.why + "; its credentials no longer work: acquire a new lease, and renew before the TTL runs out (or ask for a longer TTL)"
	case LeaseFailed:
		return l.why + "; its credentials no longer work: acquire a new lease"
	}
	return l.why + "; acquire a new lease"
}

func notFoundLease(id string) error {
	return &testdbd.Error{Code: testdbd.ENotFound, Err: testdbd.ErrNoLease,
		Message: fmt.Sprintf("no lease %q: it never existed or ended long ago", id)}
}

func (m *Manager) leaseInfoLocked(l *lease) LeaseInfo {
	host, port := l.db.rep.host.ClientAddr()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	cfg.User, cfg.Passwd, cfg.DBName = l.user, l.password, l.db.name
	u := url.URL{Scheme: "mysql", User: url.UserPassword(l.user, l.password), Host: cfg.Addr, Path: "/" + l.db.name}
	return LeaseInfo{
		ID: l.id, Template: l.tpl.name, TemplateHash: l.tpl.hash, Strategy: l.strategy, Worker: l.worker,
		Database: l.db.name, Host: host, Port: port, User: l.user, Password: l.password,
		DSN: cfg.FormatDSN(), URL: u.String(), InstanceID: l.db.rep.host.ID(), State: l.state,
		AcquiredAt: l.acquired, ExpiresAt: l.expires, TTL: l.ttl, Waited: l.waited, Resets: l.resets,
		MaxConnections: l.maxConns, EndedReason: endedReason(l), KeepAutoIncrement: l.keepAI,
		CACert: string(l.db.rep.host.TLSCA()),
	}
}
