package lease

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

// template is one template: its source, state, replicas (the template
// database on each server that holds worker databases of it) and pool.
type template struct {
	name      string
	hash      string
	src       migrations.Source
	state     templates.State
	err       error
	userError bool          // the build failed because of the migrations or seed
	done      chan struct{} // closed when the first build ends (ready or failed)
	created   time.Time
	build     templates.Timings
	progress  templates.Progress // Elapsed is computed when read, from began
	began     time.Time
	source    string // templates.SourceMigrations, SourceExternal or SourceCache
	// cachedSource is, for a template restored from the cache, how it was
	// made before it was cached.
	cachedSource string
	// ext is an external build's scratch database while the caller's
	// migrator works on it.
	ext *externalBuild
	// fleet serves the template's engine: its servers hold its databases.
	fleet    *instance.Fleet
	engine   testdbd.Engine
	result   migrations.Result
	poolSize int
	retired  bool
	// current: the build the name resolves to (see currentLocked); the
	// others of the name keep no pool of their own beyond their waiters.
	current bool
	// ensured and used: when the build was last asked for by an ensure, and
	// by an acquire. A build that is not its name's current one is retired
	// once it has no lease and neither happened for StaleBuild.
	ensured, used time.Time
	// buildTimeout bounds each build of the template database
	// (templates.BuildOptions.Timeout).
	buildTimeout time.Duration
	// ctx is canceled, with the reason, when the template is deleted or
	// replaced or the daemon stops: its builds stop.
	ctx    context.Context
	cancel context.CancelCauseFunc

	replicas map[string]*replica // by instance id
	building map[string]bool     // replicas being built, by instance id
	dbs      []*workerDB         // every worker database, all states
	waiters  []*waiter           // FIFO
	blocked  string              // why the filler could not add a database, if it could not
	health   health              // whether it can make databases now (health.go)
}

// replica is a template database on one server.
type replica struct {
	host   *host
	db     string
	owner  string // the template database's owner (templates.Built.Owner)
	schema *schema.Schema
	broken bool  // found missing or damaged; forgotten (health.go)
	bytes  int64 // its files' size when built (0: not visible)
}

// workerDB states.
const (
	dbCreating  = "creating"
	dbReady     = "ready"
	dbLeased    = "leased"
	dbResetting = "resetting"
)

// workerDB is one worker database.
type workerDB struct {
	name       string
	tpl        *template
	rep        *replica
	state      string
	user       string // the MySQL user prepared for (or held by) the lease
	password   string
	owner      string // the database's owner, the definer of its objects (accounts.CreateOwner)
	baseline   *strategies.Baseline
	lastWorker string
	lastUsed   time.Time
	readySince time.Time
	lease      *lease
	op         chan struct{} // one SQL operation at a time (reset, recycle)
	// xaEnded are the XA transactions its lease's test left prepared
	// that were rolled back when their session ended (xa.go), for the
	// next reset's report.
	xaEnded []string
}

// waiter is one Acquire waiting for a database.
type waiter struct {
	worker string
	ch     chan *workerDB // receives the database handed to it
	gone   chan struct{}  // closed when the waiter must give up (template gone, shutdown)
	reason string         // why gone was closed
}

// EnsureTemplate builds the template described by req, or finds it when a
// build of the same name and content is live. Concurrent calls for the same
// content share one build. Unless req.Async, it waits for the build,
// bounded by ctx. A failed build returns the template with its error.
//
// A name can have several live builds (one per content, i.e. hash): the
// one most recently ensured that is ready is the name's current build,
// which unpinned acquires get; the others stay leasable by hash (pinned
// acquires) until they have had no lease, ensure or acquire for
// Config.StaleBuild. A build of new content becomes current once it is ready; the
// previous one serves the name until then.
func (m *Manager) EnsureTemplate(ctx context.Context, req templates.Request) (templates.Info, error) {
	terms, err := m.checkEnsure(req)
	if err != nil {
		return templates.Info{}, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return templates.Info{}, errClosed
	}
	t := m.buildOfLocked(req.Name, terms.hash)
	if t != nil && !(t.state == templates.Failed && !t.userError) {
		if t.state == templates.Ready && req.PoolSize != 0 && req.PoolSize != t.poolSize {
			t.poolSize = req.PoolSize
		}
		if t.state == templates.Ready {
			m.healLocked(t)
		}
		t.ensured = time.Now()
	} else {
		t = m.startBuildLocked(req.Name, t, terms)
	}
	m.refreshCurrentLocked(req.Name)
	m.mu.Unlock()

	if !req.Async {
		select {
		case <-t.done:
		case <-m.ctx.Done():
			if !isClosed(t.done) {
				return m.templateInfo(t), stoppedByShutdown(t)
			}
		case <-ctx.Done():
			return m.templateInfo(t), testdbd.Errorf(testdbd.ETimeout,
				"template %s is still building (%v): call again to keep waiting, or pass async", t.name, ctx.Err())
		}
	}
	info := m.templateInfo(t)
	if info.State == templates.Failed {
		// A build past its time limit is a timeout; the rest, a template
		// that cannot be built as it is.
		code := testdbd.EConflict
		if c := testdbd.ErrorCode(t.err); c == testdbd.ETimeout || c == testdbd.EUnavailable {
			code = c
		}
		return info, testdbd.Errorf(code, "template %s failed to build: %s", t.name, info.Err)
	}
	return info, nil
}

// ensureTerms are what an ensure asked for, with the daemon's defaults in
// place of what it left out.
type ensureTerms struct {
	fleet        *instance.Fleet
	src          migrations.Source
	hash         string
	poolSize     int
	buildTimeout time.Duration
}

// checkEnsure checks an ensure's request against the daemon's limits and
// returns its terms.
func (m *Manager) checkEnsure(req templates.Request) (ensureTerms, error) {
	fleet, err := m.fleetFor(req.Engine)
	if err != nil {
		return ensureTerms{}, err
	}
	spec, err := templates.Prepare(req, fleet.Provider().Engine(), m.cfg.MigrationsRoot)
	if err != nil {
		return ensureTerms{}, err
	}
	if req.PoolSize < 0 || req.PoolSize > m.cfg.MaxDatabases {
		return ensureTerms{}, testdbd.Errorf(testdbd.EInvalid, "pool_size %d: use 0 (the default, %d) up to --max-databases=%d", req.PoolSize, m.cfg.PoolSize, m.cfg.MaxDatabases)
	}
	poolSize := req.PoolSize
	if poolSize == 0 {
		poolSize = m.cfg.PoolSize
	}
	buildTimeout := req.BuildTimeout
	switch {
	case buildTimeout < 0 || buildTimeout > m.cfg.MaxBuildTimeout:
		return ensureTerms{}, testdbd.Errorf(testdbd.EInvalid, "build_timeout_seconds %d: use 0 (the default, %d) up to %d (--max-build-timeout)",
			int(buildTimeout.Seconds()), int(m.cfg.BuildTimeout.Seconds()), int(m.cfg.MaxBuildTimeout.Seconds()))
	case buildTimeout == 0:
		buildTimeout = m.cfg.BuildTimeout
	}
	return ensureTerms{fleet: fleet, src: spec.Source, hash: spec.Hash, poolSize: poolSize, buildTimeout: buildTimeout}, nil
}

// startBuildLocked registers a new build of name on terms and starts it in
// the background. failed, when not nil, is the name's build of the same
// content that failed for a reason other than its migrations or seed: it
// is retired, and built again.
func (m *Manager) startBuildLocked(name string, failed *template, terms ensureTerms) *template {
	if failed != nil {
		m.retireLocked(failed, fmt.Sprintf("template %s (%s) is built again: its build failed", failed.name, templates.Short(failed.hash)))
	}
	now := time.Now()
	fleet := terms.fleet
	t := &template{name: name, hash: terms.hash, src: terms.src, state: templates.Building, done: make(chan struct{}),
		created: now, ensured: now, began: now, poolSize: terms.poolSize, buildTimeout: terms.buildTimeout,
		fleet: fleet, engine: fleet.Provider().Engine(),
		source: templates.SourceMigrations, progress: templates.Progress{Phase: templates.PhaseWaiting},
		replicas: map[string]*replica{}, building: map[string]bool{}}
	t.ctx, t.cancel = context.WithCancelCause(m.ctx)
	m.templates[name] = append(m.templates[name], t)
	m.builds++
	m.log.Info("building template", "template", t.name, "hash", templates.Short(t.hash), "migrations", len(terms.src.Files))
	m.goBackground(func(context.Context) { m.buildFirst(t.ctx, t) })
	return t
}

// buildOfLocked returns the live build of name with hash, or nil.
func (m *Manager) buildOfLocked(name, hash string) *template {
	for _, t := range m.templates[name] {
		if t.hash == hash {
			return t
		}
	}
	return nil
}

// currentLocked returns the build name resolves to: the most recently
// ensured ready one, else the most recently ensured one; nil without any.
func (m *Manager) currentLocked(name string) *template {
	var best, ready *template
	for _, t := range m.templates[name] {
		if best == nil || !t.ensured.Before(best.ensured) {
			best = t
		}
		if t.state == templates.Ready && (ready == nil || !t.ensured.Before(ready.ensured)) {
			ready = t
		}
	}
	if ready != nil {
		return ready
	}
	return best
}

// refreshCurrentLocked marks the current build of name, and retires the
// failed builds that are not (nothing can use them).
func (m *Manager) refreshCurrentLocked(name string) {
	cur := m.currentLocked(name)
	for _, t := range append([]*template(nil), m.templates[name]...) {
		was := t.current
		t.current = t == cur
		if t.current && !was && len(m.templates[name]) > 1 {
			m.log.Info("template now points at another build", "template", name, "hash", templates.Short(t.hash))
		}
		if !t.current && t.state == templates.Failed {
			m.retireLocked(t, fmt.Sprintf("template %s has a newer build", name))
		}
	}
	m.kickFill()
}

// retireStaleLocked retires the builds that are not their name's current
// one and have had no lease, ensure or acquire for Config.StaleBuild.
func (m *Manager) retireStaleLocked() {
	for _, ts := range m.templates {
		for _, t := range append([]*template(nil), ts...) {
			if t.current || t.state == templates.Building || len(t.waiters) > 0 || t.countsLocked().Leased > 0 {
				continue
			}
			if stale := m.cfg.StaleBuild; time.Since(t.ensured) >= stale && time.Since(t.used) >= stale {
				m.log.Info("retiring a build its name no longer points at", "template", t.name, "hash", templates.Short(t.hash))
				m.retireLocked(t, fmt.Sprintf("template %s points at a newer build", t.name))
			}
		}
	}
}

// retireLocked takes a build out of the name map: its ready databases are
// dropped now, the rest when their leases end.
func (m *Manager) retireLocked(t *template, why string) {
	ts := m.templates[t.name]
	for i, x := range ts {
		if x == t {
			ts = append(ts[:i:i], ts[i+1:]...)
			break
		}
	}
	if len(ts) == 0 {
		delete(m.templates, t.name)
	} else {
		m.templates[t.name] = ts
	}
	t.retired, t.current = true, false
	t.cancel(errors.New(why))
	m.abortExternalLocked(t, why)
	for _, w := range t.waiters {
		w.reason = fmt.Sprintf("template %s (%s) was retired: %s", t.name, templates.Short(t.hash), why)
		close(w.gone)
	}
	t.waiters = nil
	m.retired = append(m.retired, t)
	m.reapLocked(t)
}

// reapLocked drops a retired template's idle databases, and the template
// databases once no worker database is left.
func (m *Manager) reapLocked(t *template) {
	if !t.retired {
		return
	}
	for _, db := range append([]*workerDB(nil), t.dbs...) { // dropping edits t.dbs
		if db.state == dbReady {
			m.dropDBLocked(db, "template retired")
		}
	}
	if len(t.dbs) > 0 || len(t.building) > 0 || t.state == templates.Building {
		return
	}
	for id, rep := range t.replicas {
		delete(t.replicas, id)
		rep.host.tables -= len(rep.schema.Tables)
		m.dropDatabase(rep.host, rep.db, "template retired", rep.owner)
	}
	for i, x := range m.retired {
		if x == t {
			m.retired = append(m.retired[:i], m.retired[i+1:]...)
			break
		}
	}
}

// GetTemplate returns the name's current build, or with hash the build of
// the name with that hash.
func (m *Manager) GetTemplate(name, hash string) (templates.Info, error) {
	m.mu.Lock()
	t, err := m.resolveLocked(name, hash)
	m.mu.Unlock()
	if err != nil {
		return templates.Info{}, err
	}
	return m.templateInfo(t), nil
}

// resolveLocked finds the build of name that hash names (the current one
// when hash is empty).
func (m *Manager) resolveLocked(name, hash string) (*template, error) {
	cur := m.currentLocked(name)
	if cur == nil {
		return nil, notFoundTemplate(name)
	}
	if hash == "" {
		return cur, nil
	}
	if t := m.buildOfLocked(name, hash); t != nil {
		return t, nil
	}
	return nil, testdbd.Errorf(testdbd.EConflict,
		"template %s is at %s (built %s), not at %s: no live build of the name has that hash; ensure the template with your migrations again (its build is then found or made), or lease without template_hash to take the current one",
		name, templates.Short(cur.hash), cur.created.UTC().Format(time.RFC3339), hashShown(hash))
}

// hashShown is a hash as errors show it: short when it is one.
func hashShown(h string) string {
	if len(h) == 64 {
		return templates.Short(h)
	}
	if len(h) > 80 {
		return fmt.Sprintf("%q…", h[:80])
	}
	return fmt.Sprintf("%q", h)
}

// ListTemplates lists every live build, by name, the current one of a name
// first, then the others newest first.
func (m *Manager) ListTemplates() []templates.Info {
	m.mu.Lock()
	var ts []*template
	for _, builds := range m.templates {
		ts = append(ts, builds...)
	}
	m.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		switch {
		case a.name != b.name:
			return a.name < b.name
		case a.current != b.current:
			return a.current
		}
		return a.created.After(b.created)
	})
	out := make([]templates.Info, len(ts))
	for i, t := range ts {
		out[i] = m.templateInfo(t)
	}
	return out
}

// DeleteTemplate drops a template and its databases. With leases held it
// refuses unless force, which ends those leases.
func (m *Manager) DeleteTemplate(ctx context.Context, name string, force bool) (templates.Info, error) {
	m.mu.Lock()
	t := m.currentLocked(name)
	if t == nil {
		m.mu.Unlock()
		return templates.Info{}, notFoundTemplate(name)
	}
	builds := append([]*template(nil), m.templates[name]...)
	var held []*lease
	for _, b := range builds {
		for _, db := range b.dbs {
			if db.lease != nil {
				held = append(held, db.lease)
			}
		}
	}
	if len(held) > 0 && !force {
		m.mu.Unlock()
		return templates.Info{}, testdbd.Errorf(testdbd.EConflict,
			"template %s has %d active leases: release them first, or delete with force (which ends them)", name, len(held))
	}
	for _, l := range held {
		m.endLeaseLocked(l, LeaseReleased, "template "+name+" was deleted")
	}
	info := m.templateInfoLocked(t)
	for _, b := range builds {
		m.retireLocked(b, "template "+name+" was deleted")
	}
	m.mu.Unlock()
	m.log.Info("template deleted", "template", name, "leases_ended", len(held))
	return info, nil
}

func notFoundTemplate(name string) error {
	return &testdbd.Error{Code: testdbd.ENotFound, Err: testdbd.ErrNoTemplate, Message: fmt.Sprintf("no template named %q", name)}
}

func (m *Manager) templateInfo(t *template) templates.Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.templateInfoLocked(t)
}

func (m *Manager) templateInfoLocked(t *template) templates.Info {
	info := templates.Info{
		Name: t.name, Hash: t.hash, State: t.stateLocked(), Build: t.build, CreatedAt: t.created, Current: t.current,
		Progress: t.progress, Source: t.source,
		Engine: t.engine.String(), Version: t.result.Version,
		Migrations: append([]string(nil), t.result.Applied...),
	}
	if t.state == templates.Building {
		info.Progress.Elapsed = time.Since(t.began)
	} else {
		info.Progress.Elapsed = t.build.Total
	}
	if t.err != nil {
		info.Err = t.err.Error()
	} else if why := t.troubledLocked(); why != "" {
		info.Err = why
	}
	for _, rep := range t.replicas {
		if info.InstanceID == "" || rep.host.ID() < info.InstanceID {
			info.InstanceID, info.Database = rep.host.ID(), rep.db
			s := rep.schema
			info.Tables, info.Views, info.Triggers, info.Routines, info.Events =
				len(s.Tables), len(s.Views), len(s.Triggers), len(s.Routines), len(s.Events)
		}
	}
	info.Pool = t.countsLocked()
	return info
}

// targetLocked is the number of ready databases t keeps: its pool size
// when it is its name's current build, none otherwise (databases are then
// made for waiters, and released ones come back ready).
func (t *template) targetLocked() int {
	if t.current {
		return t.poolSize
	}
	return 0
}

func (t *template) countsLocked() templates.PoolCounts {
	c := templates.PoolCounts{Target: t.targetLocked()}
	for _, db := range t.dbs {
		switch db.state {
		case dbReady:
			c.Ready++
		case dbLeased:
			c.Leased++
		case dbResetting:
			c.Resetting++
		case dbCreating:
			c.Creating++
		}
	}
	return c
}

// dropServerLocked forgets everything of t on a dead server.
func (t *template) dropServerLocked(m *Manager, st *host, reason string) {
	delete(t.replicas, st.ID())
	delete(t.building, st.ID())
	var keep []*workerDB
	for _, db := range t.dbs {
		if db.rep.host != st {
			keep = append(keep, db)
			continue
		}
		if db.lease != nil {
			m.endLeaseLocked(db.lease, LeaseFailed, reason)
		}
		m.dbTotal--
	}
	t.dbs = keep
	m.reapLocked(t)
}
