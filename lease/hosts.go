package lease

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/strategies"
	"golang.org/x/sync/semaphore"
)

// host is one running instance as the manager sees it: what it holds and
// whether detection can be trusted on it.
type host struct {
	*instance.Member
	ddl    *strategies.DDLCounter
	binlog *binlog.Log // its binary log; nil when it runs without one
	// rows follows the binary log for the rows tests change (delta
	// restores); nil without one.
	rows *binlog.Rows
	// resets admits the resets on the server, as many at once as it has
	// cores (ResetSlots), the others queued in the order they came: a
	// dozen resets at once would otherwise all slow down together.
	resets   *semaphore.Weighted
	dbs      int  // worker databases on it, all states
	tables   int  // tables of every database testdbd made on it
	dead     bool // it died; nothing new goes there
	deathErr error
	tdc      int    // table_definition_cache it runs with
	recalc   string // innodb_stats_auto_recalc it runs with, when not OFF
	// spaceBusy: a lease failed for the reserve is being dropped and the
	// binary log purged; no other lease fails for the reserve until then.
	spaceBusy bool
	// xaAtPrepare: prepared XA transactions leave their session at XA
	// PREPARE (MySQL's xa_detach_on_prepare did not take), so they are
	// not rolled back when their session ends (see xa.go): that would
	// end a test's own before it commits.
	xaAtPrepare bool
}

// OnInstanceDeath is the fleet's OnDeath callback: leases on the server fail
// with a clear error, its databases leave the pools, and the filler starts
// replacements as demand requires.
func (m *Manager) OnInstanceDeath(s *instance.Member, err error) {
	m.event("error", "instance_died", fmt.Sprintf("server instance %s died: %v; its leases failed, a replacement serves new ones", s.ID(), err), "", "", s.ID(), "")
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.hosts[s.ID()]
	if st == nil {
		return
	}
	st.dead, st.deathErr = true, err
	delete(m.hosts, s.ID())
	reason := fmt.Sprintf("server instance %s died (%v)", s.ID(), err)
	for _, t := range m.allTemplatesLocked() {
		t.dropServerLocked(m, st, reason)
	}
	m.kickFill()
}

// adopt starts tracking a running server.
func (m *Manager) adopt(s *instance.Member) *host {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adoptLocked(s)
}

func (m *Manager) adoptLocked(s *instance.Member) *host {
	if st, ok := m.hosts[s.ID()]; ok {
		return st
	}
	st := &host{Member: s, ddl: &strategies.DDLCounter{}, tdc: instance.DefaultConfig.TableCacheSize(),
		resets: semaphore.NewWeighted(int64(ResetSlots))}
	if bad := testdbd.Mismatched(s.Settings); len(bad) > 0 {
		m.event("warning", "settings_mismatched", "server instance "+s.ID()+" runs with settings other than those asked for: "+strings.Join(bad, "; "), "", "", s.ID(), "")
	}
	for _, set := range s.Settings {
		switch {
		case set.Name == "table_definition_cache":
			_, _ = fmt.Sscan(set.Actual, &st.tdc)
		case set.Name == "innodb_stats_auto_recalc" && !set.OK:
			st.recalc = set.Actual
		case set.Name == "log_bin" && set.OK:
			st.binlog = &binlog.Log{}
			st.rows = m.followRows(s)
		case set.Name == "xa_detach_on_prepare" && !set.OK:
			st.xaAtPrepare = true
		}
	}
	select {
	case <-s.Done(): // it died before it was adopted
		st.dead, st.deathErr = true, s.Err()
	default:
		m.hosts[s.ID()] = st
	}
	return st
}

// followRows starts following s's binary log for the rows tests change;
// the stream stops with the server (or Manager.Close).
func (m *Manager) followRows(s *instance.Member) *binlog.Rows {
	return s.FollowRows(m.log.With("instance", s.ID()))
}

// ResetSlots is how many resets run at once on one server: its cores,
// which the daemon, the server and the tests share on a CI machine. A
// reset is mostly the server's work (a few statements and a copy), so
// more at once only share the same cores more finely, and each takes
// longer.
var ResetSlots = max(1, runtime.NumCPU())

// hostDead reports whether st died; m.mu must not be held.
func (m *Manager) hostDead(st *host) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return st.dead
}

// untrusted says why the detector's preconditions do not hold on st, or "".
func (st *host) untrusted() string {
	if st.recalc != "" {
		return "innodb_stats_auto_recalc is " + st.recalc + ", so statistics recalculation can reset MODIFIED_COUNTER"
	}
	if st.tables*2 > st.tdc {
		return fmt.Sprintf("the server holds %d tables, more than half its table_definition_cache of %d, so a table could be evicted and lose its counters", st.tables, st.tdc)
	}
	return ""
}

// tableBudget is how many tables testdbd puts on one server: half the table
// definition cache, so that no table is ever evicted (eviction resets the
// counters dirty-table detection reads).
func (st *host) tableBudget() int { return st.tdc / 2 }

// serverForTemplate returns a server with room for a template's database,
// starting one if none has room and the limits allow.
func (m *Manager) serverForTemplate(ctx context.Context, t *template) (*host, error) {
	for {
		m.mu.Lock()
		var best *host
		for _, st := range m.hosts {
			if !st.dead && st.Engine() == t.engine && (best == nil || st.tables < best.tables) {
				best = st
			}
		}
		m.mu.Unlock()
		if best != nil {
			return best, nil
		}
		st, err := m.startServer(ctx, t.fleet)
		if testdbd.ErrorCode(err) != testdbd.EExhausted || len(t.fleet.Members()) == 0 && !t.fleet.Starting() {
			return st, err
		}
		// Every allowed server is starting (for another build or the pool
		// filler): wait for one.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		for _, s := range t.fleet.Members() {
			m.adopt(s)
		}
	}
}

// startServer starts a server of f's engine within --max-instances and the
// memory budget.
func (m *Manager) startServer(ctx context.Context, f *instance.Fleet) (*host, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if reason := m.memoryBlocks(instanceEstimate); reason != "" {
		return nil, testdbd.Errorf(testdbd.EExhausted, "cannot start another server: %s", reason)
	}
	m.log.Info("starting a server on demand", "engine", f.Provider().Engine().String())
	s, err := f.Start(ctx)
	if err != nil {
		return nil, err
	}
	return m.adopt(s), nil
}

// InstanceInfo describes a running instance and the databases on it.
type InstanceInfo struct {
	testdbd.InstanceInfo
	Databases int // databases on the server now (system schemas excluded); -1 when it could not be read
	// DatadirSize is the size of the filesystem holding the datadir (0: not
	// visible to the daemon).
	DatadirSize int64
}

// Instances describes every running instance, with the settings read back
// at its start and its memory and databases read now.
func (m *Manager) Instances(ctx context.Context) []InstanceInfo {
	var out []InstanceInfo
	for _, s := range m.members() {
		info, n := s.Describe(ctx)
		u, _ := s.DatadirUsage()
		out = append(out, InstanceInfo{InstanceInfo: info, Databases: n, DatadirSize: u.Size})
	}
	return out
}
