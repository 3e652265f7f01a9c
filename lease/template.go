package lease

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/strategies"
)

// template is one template: its source, state, replicas (the template
// database on each server that holds worker databases of it) and pool.
type template struct {
	name      string
	hash      string
	src       migrations.Source
	state     TemplateState
	err       error
	userError bool          // the build failed because of the migrations or seed
	done      chan struct{} // closed when the first build ends (ready or failed)
	created   time.Time
	build     BuildTimings
	result    migrations.Result
	poolSize  int
	retired   bool

	replicas map[string]*replica // by instance id
	building map[string]bool     // replicas being built, by instance id
	dbs      []*workerDB         // every worker database, all states
	waiters  []*waiter           // FIFO
	blocked  string              // why the filler could not add a database, if it could not
}

// replica is a template database on one server.
type replica struct {
	srv    *server
	db     string
	schema *migrations.Schema
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

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName validates a template name: 1–64 letters, digits, '.', '_' or
// '-', starting with a letter or digit. Names never reach SQL: databases are
// named by hash.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		shown := name
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		return testdbd.Errorf(testdbd.EInvalid,
			"template name %q is not valid: use 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", shown)
	}
	return nil
}

// EnsureTemplate builds the template described by req, or finds it when a
// template of the same name was already built from the same content.
// Concurrent calls for the same content share one build. Unless req.Async,
// it waits for the build, bounded by ctx. A failed build returns the
// template with its error.
func (m *Manager) EnsureTemplate(ctx context.Context, req TemplateRequest) (TemplateInfo, error) {
	if err := CheckName(req.Name); err != nil {
		return TemplateInfo{}, err
	}
	engine := m.fleet.Provider().Engine()
	if req.Engine != "" && req.Engine != string(engine.Flavor) {
		return TemplateInfo{}, testdbd.Errorf(testdbd.EInvalid,
			"engine %q was asked for, but this daemon runs %s servers: leave engine empty or start a daemon with a %s server", req.Engine, engine, req.Engine)
	}
	if req.PoolSize < 0 || req.PoolSize > m.cfg.MaxDatabases {
		return TemplateInfo{}, testdbd.Errorf(testdbd.EInvalid, "pool_size %d: use 0 (the default, %d) up to --max-databases=%d", req.PoolSize, m.cfg.PoolSize, m.cfg.MaxDatabases)
	}
	if (req.MigrationsDir == "") == (len(req.Files) == 0) {
		return TemplateInfo{}, testdbd.Errorf(testdbd.EInvalid, "give either migrations_dir (a directory on the daemon's host) or migrations (uploaded files), not both or neither")
	}
	var files []migrations.File
	var err error
	if req.MigrationsDir != "" {
		files, err = migrations.LoadDir(req.MigrationsDir)
	} else {
		files, err = migrations.CheckUpload(req.Files)
	}
	if err != nil {
		return TemplateInfo{}, err
	}
	if err := migrations.CheckSeed(req.Seed); err != nil {
		return TemplateInfo{}, err
	}
	src := migrations.Source{Files: files, Seed: req.Seed}
	hash := migrations.Hash(src, engine)
	poolSize := req.PoolSize
	if poolSize == 0 {
		poolSize = m.cfg.PoolSize
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return TemplateInfo{}, errClosed
	}
	t := m.templates[req.Name]
	switch {
	case t != nil && t.hash == hash && !(t.state == TemplateFailed && !t.userError):
		if t.state == TemplateReady && req.PoolSize != 0 && req.PoolSize != t.poolSize {
			t.poolSize = req.PoolSize
			m.kickFill()
		}
	default:
		if t != nil {
			m.retireLocked(t)
		}
		t = &template{name: req.Name, hash: hash, src: src, state: TemplateBuilding, done: make(chan struct{}),
			created: time.Now(), poolSize: poolSize, replicas: map[string]*replica{}, building: map[string]bool{}}
		m.templates[req.Name] = t
		m.builds++
		m.log.Info("building template", "template", t.name, "hash", short(hash), "migrations", len(files))
		m.goBackground(func(ctx context.Context) { m.buildFirst(ctx, t) })
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
	if info.State == TemplateFailed {
		return info, testdbd.Errorf(testdbd.EConflict, "template %s failed to build: %s", t.name, info.Err)
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
	if err == nil && rep.srv.dead {
		err = testdbd.Errorf(testdbd.EUnavailable, "server instance %s died during the build: %v", rep.srv.srv.ID(), rep.srv.deathErr)
	}
	if err != nil {
		t.state, t.err = TemplateFailed, err
		t.userError = migrations.IsBuildError(err)
		t.build.Total = time.Since(start)
		close(t.done)
		m.reapLocked(t)
		m.mu.Unlock()
		m.log.Warn("template build failed", "template", t.name, "err", err)
		return
	}
	// The first worker database is made before callers are told the
	// template is ready, so that their first acquire finds it in the pool;
	// its time is part of the build report. The filler makes the rest.
	t.state = TemplateReady
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
	m.log.Info("template ready", "template", t.name, "hash", short(t.hash), "tables", len(rep.schema.Tables),
		"migrate", t.build.Migrate.Round(time.Millisecond), "total", t.build.Total.Round(time.Millisecond))
	m.kickFill()
}

// serverForTemplate returns a server with room for a template's database,
// starting one if none has room and the limits allow.
func (m *Manager) serverForTemplate(ctx context.Context, t *template) (*server, error) {
	for {
		m.mu.Lock()
		var best *server
		for _, st := range m.servers {
			if !st.dead && (best == nil || st.tables < best.tables) {
				best = st
			}
		}
		m.mu.Unlock()
		if best != nil {
			return best, nil
		}
		st, err := m.startServer(ctx)
		if testdbd.ErrorCode(err) != testdbd.EExhausted || len(m.fleet.Servers()) == 0 && !m.fleet.Starting() {
			return st, err
		}
		// Every allowed server is starting (for another build or the pool
		// filler): wait for one.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		for _, s := range m.fleet.Servers() {
			m.adopt(s)
		}
	}
}

// startServer starts a server within --max-instances and the memory budget.
func (m *Manager) startServer(ctx context.Context) (*server, error) {
	if reason := m.memoryBlocks(instanceEstimate); reason != "" {
		return nil, testdbd.Errorf(testdbd.EExhausted, "cannot start another server: %s", reason)
	}
	m.log.Info("starting a server on demand")
	s, err := m.fleet.Start(ctx)
	if err != nil {
		return nil, err
	}
	return m.adopt(s), nil
}

// buildReplica creates the template database on st: runs the migrations and
// the seed, captures the definition. The first build records its timings.
func (m *Manager) buildReplica(ctx context.Context, t *template, st *server, first bool) (*replica, error) {
	// Two templates may have the same content (under different names, or
	// one replacing a failed build): each gets a database of its own.
	m.mu.Lock()
	name := fmt.Sprintf("tdb_%s_t%d", short(t.hash), m.nextSeq())
	m.mu.Unlock()
	if err := st.ddl.Exec(ctx, st.srv.DB, 1, "CREATE DATABASE "+migrations.Quote(name)); err != nil {
		return nil, fmt.Errorf("create template database: %w", err)
	}
	fail := func(err error) (*replica, error) {
		_ = migrations.Drop(context.WithoutCancel(ctx), st.srv.DB, st.ddl, name)
		return nil, err
	}
	db, err := instance.OpenDatabase(st.srv.Admin(), name, 2)
	if err != nil {
		return fail(err)
	}
	var res migrations.Result
	err = st.ddl.Unaccounted(func() (err error) {
		res, err = migrations.Run(ctx, db, t.src, m.log.With("template", t.name))
		return err
	})
	db.Close()
	if err != nil {
		return fail(err)
	}
	cstart := time.Now()
	schema, err := migrations.Capture(ctx, st.srv.DB, name)
	if err != nil {
		return fail(err)
	}
	rep := &replica{srv: st, db: name, schema: schema}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.dead {
		return nil, testdbd.Errorf(testdbd.EUnavailable, "server instance %s died during the build: %v", st.srv.ID(), st.deathErr)
	}
	if first {
		t.result = res
		t.build.Migrate, t.build.Seed, t.build.Capture = res.Migrate, res.Seed, time.Since(cstart)
	}
	st.tables += len(schema.Tables)
	t.replicas[st.srv.ID()] = rep
	return rep, nil
}

// retireLocked takes a template out of the name map: its ready databases
// are dropped now, the rest when their leases end.
func (m *Manager) retireLocked(t *template) {
	delete(m.templates, t.name)
	t.retired = true
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
	if len(t.dbs) > 0 || len(t.building) > 0 || t.state == TemplateBuilding {
		return
	}
	for id, rep := range t.replicas {
		delete(t.replicas, id)
		rep.srv.tables -= len(rep.schema.Tables)
		st, name := rep.srv, rep.db
		if st.dead {
			continue
		}
		m.goBackground(func(ctx context.Context) { _ = migrations.Drop(ctx, st.srv.DB, st.ddl, name) })
	}
	for i, x := range m.retired {
		if x == t {
			m.retired = append(m.retired[:i], m.retired[i+1:]...)
			break
		}
	}
}

// GetTemplate returns the template with the given name.
func (m *Manager) GetTemplate(name string) (TemplateInfo, error) {
	m.mu.Lock()
	t := m.templates[name]
	m.mu.Unlock()
	if t == nil {
		return TemplateInfo{}, notFoundTemplate(name)
	}
	return m.templateInfo(t), nil
}

// ListTemplates lists the templates by name.
func (m *Manager) ListTemplates() []TemplateInfo {
	m.mu.Lock()
	ts := make([]*template, 0, len(m.templates))
	for _, t := range m.templates {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	out := make([]TemplateInfo, len(ts))
	for i, t := range ts {
		out[i] = m.templateInfo(t)
	}
	return out
}

// DeleteTemplate drops a template and its databases. With leases held it
// refuses unless force, which ends those leases.
func (m *Manager) DeleteTemplate(ctx context.Context, name string, force bool) (TemplateInfo, error) {
	m.mu.Lock()
	t := m.templates[name]
	if t == nil {
		m.mu.Unlock()
		return TemplateInfo{}, notFoundTemplate(name)
	}
	var held []*lease
	for _, db := range t.dbs {
		if db.lease != nil {
			held = append(held, db.lease)
		}
	}
	if len(held) > 0 && !force {
		m.mu.Unlock()
		return TemplateInfo{}, testdbd.Errorf(testdbd.EConflict,
			"template %s has %d active leases: release them first, or delete with force (which ends them)", name, len(held))
	}
	for _, l := range held {
		m.endLeaseLocked(l, LeaseReleased, "template "+name+" was deleted")
	}
	info := m.templateInfoLocked(t)
	m.retireLocked(t)
	m.mu.Unlock()
	m.log.Info("template deleted", "template", name, "leases_ended", len(held))
	return info, nil
}

func notFoundTemplate(name string) error {
	return testdbd.Errorf(testdbd.ENotFound, "no template named %q: create it with EnsureTemplate (POST /v1/templates)", name)
}

func (m *Manager) templateInfo(t *template) TemplateInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.templateInfoLocked(t)
}

func (m *Manager) templateInfoLocked(t *template) TemplateInfo {
	info := TemplateInfo{
		Name: t.name, Hash: t.hash, State: t.state, Build: t.build, CreatedAt: t.created,
		Engine: m.fleet.Provider().Engine().String(), Version: t.result.Version,
		Migrations: append([]string(nil), t.result.Applied...),
	}
	if t.err != nil {
		info.Err = t.err.Error()
	}
	for _, rep := range t.replicas {
		if info.InstanceID == "" || rep.srv.srv.ID() < info.InstanceID {
			info.InstanceID, info.Database = rep.srv.srv.ID(), rep.db
			s := rep.schema
			info.Tables, info.Views, info.Triggers, info.Routines, info.Events =
				len(s.Tables), len(s.Views), len(s.Triggers), len(s.Routines), len(s.Events)
		}
	}
	info.Pool = t.countsLocked()
	return info
}

func (t *template) countsLocked() PoolCounts {
	c := PoolCounts{Target: t.poolSize}
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
func (t *template) dropServerLocked(m *Manager, st *server, reason string) {
	delete(t.replicas, st.srv.ID())
	delete(t.building, st.srv.ID())
	var keep []*workerDB
	for _, db := range t.dbs {
		if db.rep.srv != st {
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

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
