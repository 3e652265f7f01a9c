package lease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/templates"
)

// externalBuild is a template database the caller's own migrator fills.
type externalBuild struct {
	host      *host
	database  string
	owner     accounts.Account
	expires   time.Time
	timer     *time.Timer
	finishing bool // FinishTemplateBuild took it
}

// ExternalBuild is where the caller's migrator builds a template.
type ExternalBuild struct {
	Database, Host, User, Password string
	Port                           int
	DSN, URL                       string
	ExpiresAt                      time.Time
	CACert                         string // as in LeaseInfo
}

// BeginExternal starts a build by the caller's own migrator (see the
// BeginTemplateBuild RPC). When a live build of the content exists, or the
// template cache holds it, it returns the template and no build: there is
// nothing to run (a build still running elsewhere is returned BUILDING;
// wait for it).
func (m *Manager) BeginExternal(ctx context.Context, req templates.ExternalRequest) (templates.Info, *ExternalBuild, error) {
	fleet, err := m.fleetFor(req.Engine)
	if err != nil {
		return templates.Info{}, nil, err
	}
	hash, err := templates.PrepareExternal(req, fleet.Provider().Engine())
	if err != nil {
		return templates.Info{}, nil, err
	}
	poolSize, buildTimeout, err := m.buildLimits(req.PoolSize, req.TTL)
	if err != nil {
		return templates.Info{}, nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return templates.Info{}, nil, errClosed
	}
	t := m.buildOfLocked(req.Name, hash)
	stranded := t != nil && m.strandedLocked(t)
	if t != nil && !(t.state == templates.Failed && t.source == templates.SourceExternal) && !stranded {
		if t.state == templates.Ready {
			m.healLocked(t)
		}
		t.ensured = time.Now()
		m.refreshCurrentLocked(req.Name)
		m.mu.Unlock()
		return m.templateInfo(t), nil, nil
	}
	switch {
	case stranded:
		m.retireLocked(t, fmt.Sprintf("template %s (%s) is built again: no server holds it any more", t.name, templates.Short(t.hash)))
	case t != nil:
		m.retireLocked(t, fmt.Sprintf("template %s (%s) is built again: its build failed", t.name, templates.Short(t.hash)))
	}
	now := time.Now()
	t = &template{name: req.Name, hash: hash, state: templates.Building, done: make(chan struct{}),
		created: now, ensured: now, began: now, poolSize: poolSize, buildTimeout: buildTimeout,
		fleet: fleet, engine: fleet.Provider().Engine(), source: templates.SourceExternal, progress: templates.Progress{Phase: templates.PhaseWaiting},
		replicas: map[string]*replica{}, building: map[string]bool{}}
	t.ctx, t.cancel = context.WithCancelCause(m.ctx)
	m.templates[req.Name] = append(m.templates[req.Name], t)
	m.builds++
	m.refreshCurrentLocked(req.Name)
	m.mu.Unlock()

	if m.cache.Has(hash) {
		// The cache has it: restored like a build of migrations would be,
		// in the background; the caller waits for READY.
		m.log.Info("external template found in the cache", "template", t.name, "hash", templates.Short(hash))
		m.goBackground(func(context.Context) { m.buildFirst(t.ctx, t) })
		return m.templateInfo(t), nil, nil
	}

	start := time.Now()
	fail := func(err error) (templates.Info, *ExternalBuild, error) {
		m.completeFirst(t.ctx, t, nil, err, start)
		return m.templateInfo(t), nil, err
	}
	st, err := m.serverForTemplate(ctx, t)
	if err != nil {
		return fail(err)
	}
	m.mu.Lock()
	t.build.Provision = time.Since(start)
	name := fmt.Sprintf("tdb_%s_t%d", templates.Short(t.hash), m.nextSeq())
	m.mu.Unlock()
	owner, err := templates.BeginExternal(ctx, st.Member, st.ddl, st.binlog, name)
	if err != nil {
		return fail(err)
	}
	x, err := m.startExternal(t, st, name, owner, buildTimeout)
	if err != nil {
		return m.templateInfo(t), nil, err
	}
	m.log.Info("external template build begun", "template", t.name, "hash", templates.Short(hash), "database", name, "instance", st.ID())
	return m.templateInfo(t), m.externalEndpoint(st, x), nil
}

// startExternal records t's external build in database name on st, its
// time limit running, unless t was deleted or replaced, or the daemon
// began shutting down, while the build's server was found and its
// database made: then nobody else would end the build, so it is aborted
// here.
func (m *Manager) startExternal(t *template, st *host, name string, owner accounts.Account, buildTimeout time.Duration) (*externalBuild, error) {
	x := &externalBuild{host: st, database: name, owner: owner, expires: time.Now().Add(buildTimeout)}
	m.mu.Lock()
	defer m.mu.Unlock()
	t.ext = x
	t.progress = templates.Progress{Phase: templates.PhaseExternal}
	x.timer = time.AfterFunc(buildTimeout, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if t.ext == x { // not finished, aborted or replaced meanwhile
			m.abortExternalLocked(t, fmt.Sprintf("the external build was not finished within its %v (ttl_seconds, or the daemon's --build-timeout)", buildTimeout))
		}
	})
	if t.retired || t.ctx.Err() != nil || m.closed {
		why := "the template was deleted or replaced while its build began"
		if m.closed {
			why = "the daemon is shutting down"
		}
		m.abortExternalLocked(t, why)
		return nil, testdbd.Errorf(testdbd.EUnavailable, "template %s: %s; begin its build again", t.name, why)
	}
	return x, nil
}

// buildLimits checks a request's pool size and build time limit and fills
// in the defaults.
func (m *Manager) buildLimits(poolSize int, timeout time.Duration) (int, time.Duration, error) {
	if poolSize < 0 || poolSize > m.cfg.MaxDatabases {
		return 0, 0, testdbd.Errorf(testdbd.EInvalid, "pool_size %d: use 0 (the default, %d) up to --max-databases=%d", poolSize, m.cfg.PoolSize, m.cfg.MaxDatabases)
	}
	if poolSize == 0 {
		poolSize = m.cfg.PoolSize
	}
	switch {
	case timeout < 0 || timeout > m.cfg.MaxBuildTimeout:
		return 0, 0, testdbd.Errorf(testdbd.EInvalid, "build_timeout_seconds %d: use 0 (the default, %d) up to %d (--max-build-timeout)",
			int(timeout.Seconds()), int(m.cfg.BuildTimeout.Seconds()), int(m.cfg.MaxBuildTimeout.Seconds()))
	case timeout == 0:
		timeout = m.cfg.BuildTimeout
	}
	return poolSize, timeout, nil
}

// externalEndpoint is what the caller's migrator connects with.
func (m *Manager) externalEndpoint(st *host, x *externalBuild) *ExternalBuild {
	host, port := st.ClientAddr()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = x.owner.User, x.owner.Password, "tcp", net.JoinHostPort(host, strconv.Itoa(port)), x.database
	cfg.MultiStatements = true
	u := url.URL{Scheme: "mysql", User: url.UserPassword(x.owner.User, x.owner.Password), Host: cfg.Addr, Path: "/" + x.database}
	return &ExternalBuild{Database: x.database, Host: host, Port: port, User: x.owner.User, Password: x.owner.Password,
		DSN: cfg.FormatDSN(), URL: u.String(), ExpiresAt: x.expires, CACert: string(st.TLSCA())}
}

// externalLocked finds the external build of name with hash that is
// waiting for the caller's migrator.
func (m *Manager) externalLocked(name, hash string) (*template, error) {
	t := m.buildOfLocked(name, hash)
	switch {
	case t == nil:
		return nil, testdbd.Errorf(testdbd.ENotFound, "template %s has no build %s: begin one with BeginTemplateBuild", name, hashShown(hash))
	case t.ext == nil && t.state == templates.Building:
		return nil, testdbd.Errorf(testdbd.EConflict, "template %s (%s) is not an external build waiting for its migrator", name, templates.Short(hash))
	case t.ext == nil:
		return nil, testdbd.Errorf(testdbd.EConflict, "template %s (%s) is %s, not an external build in progress", name, templates.Short(hash), t.state)
	case t.ext.finishing:
		return nil, testdbd.Errorf(testdbd.EConflict, "template %s (%s) is being finished already", name, templates.Short(hash))
	}
	return t, nil
}

// takeExternal claims the external build of name with hash for finishing
// or aborting: its time limit no longer applies.
func (m *Manager) takeExternal(name, hash string) (*template, *externalBuild, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.externalLocked(name, hash)
	if err != nil {
		return nil, nil, err
	}
	t.ext.finishing = true
	t.ext.timer.Stop()
	return t, t.ext, nil
}

// FinishExternal makes an external build's database the template: capture,
// first worker database, READY. Unless async it waits, bounded by ctx.
func (m *Manager) FinishExternal(ctx context.Context, name, hash string, async bool) (templates.Info, error) {
	t, x, err := m.takeExternal(name, hash)
	if err != nil {
		return templates.Info{}, err
	}
	m.mu.Lock()
	t.build.Migrate = time.Since(t.began) - t.build.Provision // the caller's migrator
	m.mu.Unlock()
	m.goBackground(func(context.Context) {
		start := t.began
		opts := m.buildOptions(t, x.host, true)
		built, err := templates.FinishExternal(t.ctx, x.host.Member, x.host.ddl, x.database, x.owner.User, opts)
		m.mu.Lock()
		t.ext = nil
		if err == nil {
			t.build.Capture = built.Capture
		}
		m.mu.Unlock()
		var rep *replica
		if err == nil {
			rep, err = m.addReplica(t, x.host, built)
		}
		m.completeFirst(t.ctx, t, rep, err, start)
	})
	if !async {
		select {
		case <-t.done:
		case <-m.ctx.Done():
			if !isClosed(t.done) {
				return m.templateInfo(t), stoppedByShutdown(t)
			}
		case <-ctx.Done():
			return m.templateInfo(t), testdbd.Errorf(testdbd.ETimeout,
				"template %s is still being captured (%v): wait for it with GetTemplate or testdbd template wait", name, ctx.Err())
		}
	}
	info := m.templateInfo(t)
	if info.State == templates.Failed {
		return info, testdbd.Errorf(testdbd.EConflict, "template %s failed to build: %s", name, info.Err)
	}
	return info, nil
}

// AbortExternal ends an external build without a template: its database
// and account are dropped, and the template is FAILED with reason.
func (m *Manager) AbortExternal(ctx context.Context, name, hash, reason string) (templates.Info, error) {
	t, x, err := m.takeExternal(name, hash)
	if err != nil {
		return templates.Info{}, err
	}
	if reason == "" {
		reason = "the caller aborted it"
	}
	m.endExternal(ctx, t, x, reason)
	return m.templateInfo(t), nil
}

// endExternal ends t's external build x, taken (finishing), without a
// template: the build's sessions end, what it made is dropped
// (discardBuild), and the template is FAILED with reason.
func (m *Manager) endExternal(ctx context.Context, t *template, x *externalBuild, reason string) {
	templates.EndBuild(context.WithoutCancel(ctx), x.host.Member, x.owner.User)
	m.discardBuild(context.WithoutCancel(ctx), t, x.host, x.database, x.owner.User)
	if x.host.binlog != nil {
		x.host.binlog.Unwatch(x.database)
	}
	m.mu.Lock()
	t.ext = nil
	m.mu.Unlock()
	m.log.Info("external template build aborted", "template", t.name, "hash", templates.Short(t.hash), "reason", reason)
	m.completeFirst(t.ctx, t, nil, errors.New("external build aborted: "+reason), t.began)
}

// abortExternalLocked ends t's external build, if the caller's migrator
// is still at it, in the background: t is retired for why.
func (m *Manager) abortExternalLocked(t *template, why string) {
	x := t.ext
	if x == nil || x.finishing {
		return
	}
	x.finishing = true
	x.timer.Stop()
	m.goBackground(func(ctx context.Context) { m.endExternal(ctx, t, x, why) })
}
