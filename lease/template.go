package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	fleet, err := m.fleetFor(req.Engine)
	if err != nil {
		return templates.Info{}, err
	}
	spec, err := templates.Prepare(req, fleet.Provider().Engine(), m.cfg.MigrationsRoot)
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
	t := m.buildOfLocked(req.Name, hash)
	switch {
	case t != nil && !(t.state == templates.Failed && !t.userError):
		if t.state == templates.Ready && req.PoolSize != 0 && req.PoolSize != t.poolSize {
			t.poolSize = req.PoolSize
			m.kickFill()
		}
		t.ensured = time.Now()
	default:
		if t != nil {
			m.retireLocked(t, fmt.Sprintf("template %s (%s) is built again: its build failed", t.name, templates.Short(t.hash)))
		}
		now := time.Now()
		t = &template{name: req.Name, hash: hash, src: src, state: templates.Building, done: make(chan struct{}),
			created: now, ensured: now, began: now, poolSize: poolSize, buildTimeout: buildTimeout,
			fleet: fleet, engine: fleet.Provider().Engine(),
			source: templates.SourceMigrations, progress: templates.Progress{Phase: templates.PhaseWaiting},
			replicas: map[string]*replica{}, building: map[string]bool{}}
		t.ctx, t.cancel = context.WithCancelCause(m.ctx)
		m.templates[req.Name] = append(m.templates[req.Name], t)
		m.builds++
		m.log.Info("building template", "template", t.name, "hash", templates.Short(hash), "migrations", len(files))
		m.goBackground(func(context.Context) { m.buildFirst(t.ctx, t) })
	}
	m.refreshCurrentLocked(req.Name)
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
// migrations and the seed (or restores the template from the cache),
// captures the result, and creates the first worker database.
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
	m.completeFirst(ctx, t, rep, err, start)
}

// completeFirst ends a template's first build: on success it makes the
// first worker database before callers are told the template is ready (so
// that their first acquire finds it in the pool; its time is part of the
// build report; the filler makes the rest) and saves the template to the
// cache; on failure the template is FAILED with err.
func (m *Manager) completeFirst(ctx context.Context, t *template, rep *replica, err error, start time.Time) {
	m.mu.Lock()
	if err == nil && rep.host.dead {
		err = testdbd.Errorf(testdbd.EUnavailable, "server instance %s died during the build: %v", rep.host.ID(), rep.host.deathErr)
	}
	if err != nil {
		t.state, t.err = templates.Failed, err
		t.userError = migrations.IsBuildError(err)
		t.build.Total = time.Since(start)
		t.progress.Phase = templates.PhaseFailed
		close(t.done)
		m.refreshCurrentLocked(t.name)
		m.reapLocked(t)
		m.mu.Unlock()
		m.log.Warn("template build failed", "template", t.name, "err", err)
		m.event("error", "template_failed", fmt.Sprintf("template %s failed to build: %v", t.name, err), t.name, "", "", "")
		return
	}
	t.state = templates.Ready
	t.progress = templates.Progress{Phase: templates.PhaseCloning}
	m.refreshCurrentLocked(t.name)
	db := m.registerDBLocked(t, rep)
	m.mu.Unlock()
	cstart := time.Now()
	if err := m.createDB(ctx, db); err != nil && !isCanceled(err) {
		m.log.Warn("first worker database", "template", t.name, "err", err)
	}
	m.mu.Lock()
	t.build.Clone = time.Since(cstart)
	t.build.Total = time.Since(start)
	t.progress.Phase = templates.PhaseDone
	close(t.done)
	source := t.source
	m.mu.Unlock()
	m.log.Info("template ready", "template", t.name, "hash", templates.Short(t.hash), "source", source, "tables", len(rep.schema.Tables),
		"migrate", t.build.Migrate.Round(time.Millisecond), "restore", t.build.Restore.Round(time.Millisecond),
		"total", t.build.Total.Round(time.Millisecond))
	if source != templates.SourceCache && m.cache != nil {
		m.goBackground(func(ctx context.Context) { m.saveToCache(ctx, t, rep) })
	}
	m.kickFill()
}

// saveToCache writes the image of a template just built to the cache.
func (m *Manager) saveToCache(ctx context.Context, t *template, rep *replica) {
	if m.cache.Has(t.hash) {
		return
	}
	start := time.Now()
	hdr := m.imageHeader(t, rep)
	size, err := m.cache.Save(t.hash, func(w io.Writer) error { return templates.WriteImage(ctx, rep.host.DB, hdr, w) })
	if err != nil {
		if !isCanceled(err) {
			m.log.Warn("template not cached", "template", t.name, "hash", templates.Short(t.hash), "err", err)
		}
		return
	}
	m.log.Info("template cached", "template", t.name, "hash", templates.Short(t.hash), "bytes", size,
		"took", time.Since(start).Round(time.Millisecond), "dir", m.cache.Dir)
}

// imageHeader describes rep, a replica of t, for an image.
func (m *Manager) imageHeader(t *template, rep *replica) templates.ImageHeader {
	m.mu.Lock()
	defer m.mu.Unlock()
	source := t.source
	if source == templates.SourceCache {
		source = t.cachedSource
	}
	return templates.ImageHeader{Engine: t.engine.String(), Hash: t.hash, Name: t.name, Source: source,
		Version: t.result.Version, Migrations: append([]string(nil), t.result.Applied...), Schema: rep.schema}
}

// buildReplica creates the template database on st. The first build of a
// template restores it from the cache when the cache has it, else runs the
// migrations and the seed; later replicas run the migrations again, or,
// for a template that has none the daemon can run (external, cached),
// copy an existing replica. The first build records its timings.
func (m *Manager) buildReplica(ctx context.Context, t *template, st *host, first bool) (*replica, error) {
	// Two templates may have the same content (under different names, or
	// one replacing a failed build): each gets a database of its own.
	m.mu.Lock()
	name := fmt.Sprintf("tdb_%s_t%d", templates.Short(t.hash), m.nextSeq())
	source := t.source
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
	opts := templates.BuildOptions{Timeout: t.buildTimeout, Log: m.log.With("template", t.name)}
	if first {
		opts.Progress = func(phase string, step, steps int, migration string) {
			m.mu.Lock()
			t.progress = templates.Progress{Phase: phase, Step: step, Steps: steps, Migration: migration}
			m.mu.Unlock()
		}
	}
	var built *templates.Built
	var err error
	restored := false
	if first {
		built, restored = m.restoreFromCache(ctx, t, st, name, opts)
	}
	switch {
	case restored:
	case source == templates.SourceMigrations:
		built, err = templates.Build(ctx, st.Member, st.ddl, name, t.src, opts)
	case first:
		err = testdbd.Errorf(testdbd.EUnavailable, "template %s: its image in the template cache could not be used (see the daemon's log): begin its build again", t.name)
	default:
		built, err = m.copyReplica(ctx, t, st, name, opts)
	}
	<-m.buildSlots
	if err != nil {
		return nil, err
	}
	if first && !restored && source == templates.SourceMigrations {
		m.mu.Lock()
		t.result = built.Result
		t.build.Migrate, t.build.Seed, t.build.Capture = built.Result.Migrate, built.Result.Seed, built.Capture
		m.mu.Unlock()
	}
	return m.addReplica(t, st, built)
}

// addReplica records a template database built on st as a replica of t.
func (m *Manager) addReplica(t *template, st *host, built *templates.Built) (*replica, error) {
	rep := &replica{host: st, db: built.Database, owner: built.Owner, schema: built.Schema}
	rep.bytes, _ = st.DatabaseBytes(built.Database)
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.dead {
		return nil, testdbd.Errorf(testdbd.EUnavailable, "server instance %s died during the build: %v", st.ID(), st.deathErr)
	}
	st.tables += len(built.Schema.Tables)
	t.replicas[st.ID()] = rep
	return rep, nil
}

// restoreFromCache loads t's image from the cache into database name on
// st, when the cache has a usable one. An image that cannot be used is
// dropped from the cache, and the template is built from its migrations.
func (m *Manager) restoreFromCache(ctx context.Context, t *template, st *host, name string, opts templates.BuildOptions) (*templates.Built, bool) {
	if m.cache == nil {
		return nil, false
	}
	f, err := m.cache.Open(t.hash)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	start := time.Now()
	hdr, rows, closer, err := templates.ReadImageHeader(f)
	if err == nil {
		defer closer.Close()
		if why := hdr.Compatible(st.Engine(), t.hash); why != "" {
			err = errors.New(why)
		}
	}
	var built *templates.Built
	if err == nil {
		built, err = templates.LoadImage(ctx, st.Member, st.ddl, name, hdr, rows, opts)
	}
	if err != nil {
		if !isCanceled(err) {
			m.log.Warn("template cache entry not used: building from the migrations", "template", t.name, "hash", templates.Short(t.hash), "err", err)
			m.cache.Remove(t.hash)
		}
		return nil, false
	}
	m.mu.Lock()
	t.source, t.cachedSource = templates.SourceCache, hdr.Source
	t.result = migrations.Result{Version: hdr.Version, Applied: hdr.Migrations}
	t.build.Restore = time.Since(start)
	m.mu.Unlock()
	m.log.Info("template restored from the cache", "template", t.name, "hash", templates.Short(t.hash), "took", time.Since(start).Round(time.Millisecond))
	return built, true
}

// copyReplica makes database name on st a copy of one of t's replicas,
// through an image streamed from its server.
func (m *Manager) copyReplica(ctx context.Context, t *template, st *host, name string, opts templates.BuildOptions) (*templates.Built, error) {
	m.mu.Lock()
	var src *replica
	for _, rep := range t.replicas {
		if !rep.broken && !rep.host.dead {
			src = rep
			break
		}
	}
	m.mu.Unlock()
	if src == nil {
		return nil, testdbd.Errorf(testdbd.EUnavailable,
			"template %s has no server left to copy it from (it was not built from migrations the daemon can run again): ensure it again", t.name)
	}
	hdr := m.imageHeader(t, src)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(templates.WriteImage(ctx, src.host.DB, hdr, pw)) }()
	defer func() { _ = pr.Close() }()
	got, rows, closer, err := templates.ReadImageHeader(pr)
	if err != nil {
		return nil, fmt.Errorf("copy template %s from instance %s: %w", t.name, src.host.ID(), err)
	}
	defer closer.Close()
	built, err := templates.LoadImage(ctx, st.Member, st.ddl, name, got, rows, opts)
	if err != nil {
		return nil, fmt.Errorf("copy template %s from instance %s: %w", t.name, src.host.ID(), err)
	}
	return built, nil
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
