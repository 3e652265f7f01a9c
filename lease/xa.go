package lease

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/testdbd/testdbd/binlog"
)

// XA transactions a test leaves prepared: once the session that prepared
// one has ended, any account on the server that knows its xid may commit
// or roll it back (MariaDB lists every account's xids to every account;
// MySQL hides them from accounts without XA_RECOVER_ADMIN, but a test's
// xid is often easy to guess), so another lease's test could write it into
// this lease's database. Every xaCheckEvery the manager rolls back, on each
// server with leases, the prepared transactions the binary log shows wrote
// to a database and whose session has ended (binlog.Log.RollBackEnded);
// one a session still holds cannot be ended from another session, by
// anyone (on MySQL because the servers run with xa_detach_on_prepare off;
// see xaAtPrepare). The next reset's report lists them (xa_rolled_back), and an
// event says what happened and what to do. A test that means to commit a
// prepared transaction from another session (a recovery test) cannot do so
// on a shared server; the resets still roll back what is left (strategies).
const xaCheckEvery = 100 * time.Millisecond

// xaLoop rolls back ended sessions' prepared XA transactions until the
// manager closes.
func (m *Manager) xaLoop() {
	defer m.wg.Done()
	tick := time.NewTicker(xaCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
			m.rollBackEndedXA(m.ctx)
		}
	}
}

// rollBackEndedXA rolls back, on every server with leases, the prepared XA
// transactions whose session has ended: one XA RECOVER per server when
// none is prepared.
func (m *Manager) rollBackEndedXA(ctx context.Context) {
	m.mu.Lock()
	var hosts []*host
	for _, l := range m.leases {
		if h := l.db.rep.host; !h.dead && h.binlog != nil && !h.xaAtPrepare && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	m.mu.Unlock()
	for _, h := range hosts {
		ended, err := h.binlog.RollBackEnded(ctx, h.DB)
		if err != nil && !isCanceled(err) && !m.hostDead(h) {
			m.log.Warn("roll back the XA transactions left prepared by ended sessions", "instance", h.ID(), "err", err)
		}
		for _, e := range ended {
			m.xaRolledBack(h, e)
		}
	}
}

// xaRolledBack tells the lease whose database e wrote to that its prepared
// transaction was rolled back.
func (m *Manager) xaRolledBack(h *host, e binlog.Ended) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.leases {
		if l.db.rep.host != h || !slices.Contains(e.Databases, l.db.name) {
			continue
		}
		l.db.xaEnded = append(l.db.xaEnded, e.ID.String())
		msg := fmt.Sprintf("lease %s: its test left XA transaction %s prepared when the session that prepared it ended (XA PREPARE without "+
			"XA COMMIT or XA ROLLBACK on that session); testdbd rolled it back, since any other account on the server that knows its xid "+
			"could commit it into the lease's database: end XA transactions on the session that prepared them", l.id, e.ID)
		m.log.Warn("XA transaction left prepared by an ended session rolled back", "lease", l.id, "database", l.db.name, "xid", e.ID.String())
		m.event("warning", "xa_rolled_back", msg, l.tpl.name, l.id, h.ID(), l.db.name)
		return
	}
	m.log.Info("XA transaction left prepared by an ended session rolled back", "instance", h.ID(),
		"databases", strings.Join(e.Databases, ","), "xid", e.ID.String())
}
