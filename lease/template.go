package lease

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/testdbd/testdbd"
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
	result    migrations.Result
	poolSize  int
	retired   bool
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
}

// waiter is one Acquire waiting for a database.
type waiter struct {
	worker string
	ch     chan *workerDB // receives the database handed to it
	gone   chan struct{}  // closed when the waiter must give up (template gone, shutdown)
	reason string         // why gone was closed
}

// EnsureTemplate builds the template described by req, or finds it when a
// template of the same name was already built from the same content.
// Concurrent calls for the same content share one build. Unless req.Async,
// it waits for the build, bounded by ctx. A failed build returns the
// template with its error.
func (m *Manager) EnsureTemplate(ctx context.Context, req templates.Request) (templates.Info, error) {
	spec, err := templates.Prepare(req, m.fleet.Provider().Engine(), m.cfg.MigrationsRoot)
	if err != nil {
		return templates.Info{}, err
	}
	if req.PoolSize < 0 || req.PoolSize > m.cfg.MaxDatabases {
		return templates.Info{}, testdbd.Errorf(testdbd.EInvalid, "pool_size %d: use 0 (the default, %d) up to --max-databases=%d", req.PoolSize, m.cfg.PoolSize, m.cfg.MaxDatabases)
	}
	src, hash, files := spec.Source, spec.Hash, spec.Source.Files
	poolSize := req.PoolSize
	if poolSize == 0 {
		poolSize = m.cfg.PoolSize
	}
	buildTimeout := req.BuildTimeout
	switch {
	case buildTimeout < 0 || buildTimeout > m.cfg.MaxBuildTimeout:
		return templates.Info{}, testdbd.Errorf(testdbd.EInvalid, "build_timeout_seconds %d: use 0 (the default, %d) up to %d (--max-build-timeout)",
			int(buildTimeout.Seconds()), int(m.cfg.BuildTimeout.Seconds()), int(m.cfg.MaxBuildTimeout.Seconds()))
	case buildTimeout == 0:
		buildTimeout = m.cfg.BuildTimeout
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return templates.Info{}, errClosed
	}
	t := m.templates[req.Name]
	switch {
	case t != nil && t.hash == hash && !(t.state == templates.Failed && !t.userError):
		if t.state == templates.Ready && req.PoolSize != 0 && req.PoolSize != t.poolSize {
			t.poolSize = req.PoolSize
			m.kickFill()
		}
	default:
		if t != nil {
			m.retireLocked(t, fmt.Sprintf("template %s was replaced by a build of other migrations", t.name))
		}
		t = &template{name: req.Name, hash: hash, src: src, state: templates.Building, done: make(chan struct{}),
			created: time.Now(), poolSize: poolSize, buildTimeout: buildTimeout,
			replicas: map[string]*replica{}, building: map[string]bool{}}
		t.ctx, t.cancel = context.WithCancelCause(m.ctx)
		m.templates[req.Name] = t
		m.builds++
		m.log.Info("building template", "template", t.name, "hash", templates.Short(hash), "migrations", len(files))
		m.goBackground(func(context.Context) { m.buildFirst(t.ctx, t) })
	}
	m.mu.Unlock()

	if !req.Async {
		select {
		case <-t.done:
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

// buildFirst builds a template for the first time: picks a server, runs the
// migrations and the seed, captures the result, and creates the first
// worker database.
func (m *Manager) buildFirst(ctx context.Context, t *template) {
	start := time.Now()
	st, err := m.serverForTemplate(ctx, t)
	m.mu.Lock()
	t.build.Provision = time.Since(start)
	m.mu.Unlock()
	var rep *replica
	if err == nil {
		rep, err = m.buildReplica(ctx, t, st, true)
	}
	m.mu.Lock()
	if err == nil && rep.host.dead {
		err = testdbd.Errorf(testdbd.EUnavailable, "server instance %s died during the build: %v", rep.host.ID(), rep.host.deathErr)
	}
	if err != nil {
		t.state, t.err = templates.Failed, err
		t.userError = migrations.IsBuildError(err)
		t.build.Total = time.Since(start)
		close(t.done)
		m.reapLocked(t)
		m.mu.Unlock()
		m.log.Warn("template build failed", "template", t.name, "err", err)
		m.event("error", "template_failed", fmt.Sprintf("template %s failed to build: %v", t.name, err), t.name, "", "", "")
		return
	}
	// The first worker database is made before callers are told the
	// template is ready, so that their first acquire finds it in the pool;
	// its time is part of the build report. The filler makes the rest.
	t.state = templates.Ready
	db := m.registerDBLocked(t, rep)
	m.mu.Unlock()
	cstart := time.Now()
	if err := m.createDB(ctx, db); err != nil && !isCanceled(err) {
		m.log.Warn("first worker database", "template", t.name, "err", err)
	}
	m.mu.Lock()
	t.build.Clone = time.Since(cstart)
	t.build.Total = time.Since(start)
	close(t.done)
	m.mu.Unlock()
	m.log.Info("template ready", "template", t.name, "hash", templates.Short(t.hash), "tables", len(rep.schema.Tables),
		"migrate", t.build.Migrate.Round(time.Millisecond), "total", t.build.Total.Round(time.Millisecond))
	m.kickFill()
}

// buildReplica creates the template database on st: runs the migrations and
// the seed, captures the definition. The first build records its timings.
func (m *Manager) buildReplica(ctx context.Context, t *template, st *host, first bool) (*replica, error) {
	// Two templates may have the same content (under different names, or
	// one replacing a failed build): each gets a database of its own.
	m.mu.Lock()
	name := fmt.Sprintf("tdb_%s_t%d", templates.Short(t.hash), m.nextSeq())
	m.mu.Unlock()
	waitStart := time.Now()
	select {
	case m.buildSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of the --max-builds=%d builds to end: %w", cap(m.buildSlots), context.Cause(ctx))
	}
	if first {
		m.mu.Lock()
		t.build.Provision += time.Since(waitStart)
		m.mu.Unlock()
	}
	built, err := templates.Build(ctx, st.Member, st.ddl, name, t.src,
		templates.BuildOptions{Timeout: t.buildTimeout, Log: m.log.With("template", t.name)})
	<-m.buildSlots
	if err != nil {
		return nil, err
	}
	rep := &replica{host: st, db: name, owner: built.Owner, schema: built.Schema}
	rep.bytes, _ = st.DatabaseBytes(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.dead {
		return nil, testdbd.Errorf(testdbd.EUnavailable, "server instance %s died during the build: %v", st.ID(), st.deathErr)
	}
	if first {
		t.result = built.Result
		t.build.Migrate, t.build.Seed, t.build.Capture = built.Result.Migrate, built.Result.Seed, built.Capture
	}
	st.tables += len(built.Schema.Tables)
	t.replicas[st.ID()] = rep
	return rep, nil
}

// retireLocked takes a template out of the name map: its ready databases
// are dropped now, the rest when their leases end.
func (m *Manager) retireLocked(t *template, why string) {
	delete(m.templates, t.name)
	t.retired = true
	t.cancel(errors.New(why))
	for _, w := range t.waiters {
		w.reason = fmt.Sprintf("template %s was replaced by a new build", t.name)
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

// GetTemplate returns the template with the given name.
func (m *Manager) GetTemplate(name string) (templates.Info, error) {
	m.mu.Lock()
	t := m.templates[name]
	m.mu.Unlock()
	if t == nil {
		return templates.Info{}, notFoundTemplate(name)
	}
	return m.templateInfo(t), nil
}

// ListTemplates lists the templates by name.
func (m *Manager) ListTemplates() []templates.Info {
	m.mu.Lock()
	ts := make([]*template, 0, len(m.templates))
	for _, t := range m.templates {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
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
	t := m.templates[name]
	if t == nil {
		m.mu.Unlock()
		return templates.Info{}, notFoundTemplate(name)
	}
	var held []*lease
	for _, db := range t.dbs {
		if db.lease != nil {
			held = append(held, db.lease)
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
	m.retireLocked(t, "template "+name+" was deleted")
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
		Name: t.name, Hash: t.hash, State: t.stateLocked(), Build: t.build, CreatedAt: t.created,
		Engine: m.fleet.Provider().Engine().String(), Version: t.result.Version,
		Migrations: append([]string(nil), t.result.Applied...),
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

func (t *template) countsLocked() templates.PoolCounts {
	c := templates.PoolCounts{Target: t.poolSize}
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
