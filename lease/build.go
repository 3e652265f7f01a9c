package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

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
	if err != nil && m.ctx.Err() != nil {
		err = stoppedByShutdown(t)
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
		if m.ctx.Err() != nil {
			m.log.Info("template build stopped: the daemon is shutting down", "template", t.name)
			return
		}
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
// copy an existing replica (see otherReplica). The first build records its
// timings. What a build that fails made on st is dropped (discardBuild).
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
	opts := m.buildOptions(t, st, first)
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
		built, err = m.otherReplica(ctx, t, st, name, opts)
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

// buildOptions are the options of a build of t on st: its time limit, its
// progress (the first build's), and discardBuild for what a failed one
// made.
func (m *Manager) buildOptions(t *template, st *host, first bool) templates.BuildOptions {
	opts := templates.BuildOptions{Timeout: t.buildTimeout, Log: m.log.With("template", t.name), Binlog: st.binlog,
		Discard: func(ctx context.Context, database string, users ...string) {
			m.discardBuild(ctx, t, st, database, users...)
		}}
	if first {
		opts.Progress = func(phase string, step, steps int, migration string) {
			m.mu.Lock()
			t.progress = templates.Progress{Phase: phase, Step: step, Steps: steps, Migration: migration}
			m.mu.Unlock()
		}
	}
	return opts
}

// otherReplica makes database name on st another replica of t, a template
// the daemon does not build from migrations (external, or restored from
// the cache): a copy of a replica on a live server, or, when no server
// holds one any more (they died), t's image in the template cache, or the
// migrations the daemon has of it (a cached build of migrations). So a
// template whose servers all died heals on a new one by itself.
func (m *Manager) otherReplica(ctx context.Context, t *template, st *host, name string, opts templates.BuildOptions) (*templates.Built, error) {
	if src := m.liveReplica(t); src != nil {
		return m.copyReplica(ctx, t, src, st, name, opts)
	}
	if built, _, ok := m.loadCached(ctx, t, st, name, opts); ok {
		m.log.Info("template restored from the cache on a new server: no server held it any more", "template", t.name,
			"hash", templates.Short(t.hash), "instance", st.ID())
		return built, nil
	}
	m.mu.Lock()
	migratable := t.cachedSource == templates.SourceMigrations && (len(t.src.Files) > 0 || t.src.Seed != "")
	m.mu.Unlock()
	if migratable {
		m.log.Info("template built again from its migrations on a new server: no server held it any more and the cache has no image of it",
			"template", t.name, "hash", templates.Short(t.hash), "instance", st.ID())
		return templates.Build(ctx, st.Member, st.ddl, name, t.src, opts)
	}
	return nil, testdbd.Errorf(testdbd.EUnavailable,
		"template %s has no server left to copy it from and the template cache has no image of it (it was built by your own migrator): begin its build again",
		t.name)
}

// liveReplica returns a replica of t on a live server, or nil.
func (m *Manager) liveReplica(t *template) *replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rep := range t.replicas {
		if !rep.broken && !rep.host.dead {
			return rep
		}
	}
	return nil
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

// restoreFromCache is the first build of t from its image in the cache,
// when the cache has a usable one (see loadCached): the template's source
// is then the cache.
func (m *Manager) restoreFromCache(ctx context.Context, t *template, st *host, name string, opts templates.BuildOptions) (*templates.Built, bool) {
	start := time.Now()
	built, hdr, ok := m.loadCached(ctx, t, st, name, opts)
	if !ok {
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

// loadCached loads t's image from the cache into database name on st,
// when the cache has a usable one. An image that cannot be used is
// dropped from the cache (the caller builds the template otherwise).
func (m *Manager) loadCached(ctx context.Context, t *template, st *host, name string, opts templates.BuildOptions) (*templates.Built, *templates.ImageHeader, bool) {
	if m.cache == nil {
		return nil, nil, false
	}
	f, err := m.cache.Open(t.hash)
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
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
		if !isCanceled(err) && !m.hostDead(st) {
			m.log.Warn("template cache entry not used", "template", t.name, "hash", templates.Short(t.hash), "err", err)
			m.cache.Remove(t.hash)
		}
		return nil, nil, false
	}
	return built, hdr, true
}

// copyReplica makes database name on st a copy of src, a replica of t,
// through an image streamed from its server.
func (m *Manager) copyReplica(ctx context.Context, t *template, src *replica, st *host, name string, opts templates.BuildOptions) (*templates.Built, error) {
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

// discardTimeout bounds discardBuild's own attempt; a drop that does not
// succeed within it goes on in the background.
const discardTimeout = 30 * time.Second

// discardBuild drops what a build of t that failed made on st, before the
// failure is reported (templates.BuildOptions.Discard): the XA
// transactions the build's sessions left prepared that wrote to database
// (the binary log shows which: their changes would wait for anyone who
// knows their xid to commit them, and their locks would hold the drop),
// the build's accounts, and database. It logs what it dropped; a drop that
// fails is tried again in the background (dropDatabase). Once the daemon
// is shutting down it drops nothing: the server goes, and its data with it.
func (m *Manager) discardBuild(ctx context.Context, t *template, st *host, database string, users ...string) {
	if m.ctx.Err() != nil || m.hostDead(st) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, discardTimeout)
	defer cancel()
	var rolled []string
	err := func() error {
		for _, u := range users {
			if err := accounts.Drop(ctx, st.DB, u); err != nil {
				return err
			}
		}
		if st.binlog != nil {
			ids, _, err := st.binlog.RollBackXA(ctx, st.DB, database)
			for _, id := range ids {
				rolled = append(rolled, id.String())
			}
			if err != nil {
				return err
			}
		}
		if err := schema.Drop(ctx, st.DB, st.ddl, database); err != nil {
			return strategies.ExplainLockWait(ctx, st.DB, err)
		}
		return nil
	}()
	if err != nil {
		if !m.hostDead(st) {
			m.log.Warn("drop what a failed build made: trying again in the background", "template", t.name, "instance", st.ID(),
				"database", database, "accounts", users, "xa_rolled_back", rolled, "err", err)
			m.dropDatabase(st, database, "its build failed", users...)
		}
		return
	}
	m.log.Info("dropped what a failed build made", "template", t.name, "instance", st.ID(),
		"database", database, "accounts", users, "xa_rolled_back", rolled)
}
