package lease

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/testdbd/testdbd/accounts"
	"github.com/testdbd/testdbd/instance"
)

// Space: no lease can fill its server's datadir, which would make the
// server fail every lease on it (InnoDB aborts when it runs out of space in
// its own files). Every spaceCheckEvery the manager measures, on each
// server whose datadir it can see, each leased database's files and the
// filesystem's free space. A lease whose database outgrows its cap
// (Config.LeaseSpace) fails alone: its sessions are ended and its database
// dropped, which gives the space back at once.
//
// The binary log is the space no database holds: every row a test writes
// is written there too. It is purged as it grows, whoever writes (tidyLogs,
// from the same tick), and counts in no lease's cap. When the free space
// falls below the reserve, the log is purged first; if that is not enough,
// the lease that takes the most space fails, counting for each both its
// database's files and what it wrote to the log that is not purged yet
// (binlog.Log.Written): a lease that only churns rows (inserts and deletes
// them, or writes to a MEMORY table) is the one blamed for the log it
// fills, never a lease that idles beside it. After the drop the log is
// purged again, and only then may the reserve fail another lease on the
// server (measuring before would blame a lease for space that is on its
// way back).
const spaceCheckEvery = 250 * time.Millisecond

// Defaults of the space limits.
const (
	DefaultLeaseSpace = 512 << 20
	minReserve        = 32 << 20
)

// spaceLoop purges binary logs and checks space until the manager closes.
func (m *Manager) spaceLoop() {
	defer m.wg.Done()
	tick := time.NewTicker(spaceCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
			m.tidyLogs()
			m.checkSpace()
		}
	}
}

// tidyLogs starts, on every live server with a binary log, a purge of the
// log when one is due (binlog.TidyEvery): one SHOW BINARY LOGS when the log
// is small.
func (m *Manager) tidyLogs() {
	m.mu.Lock()
	var due []*host
	for _, h := range m.hosts {
		if !h.dead && h.binlog != nil && h.binlog.TidyDue() {
			due = append(due, h)
		}
	}
	m.mu.Unlock()
	for _, h := range due {
		m.goBackground(func(ctx context.Context) {
			if err := h.binlog.Tidy(ctx, h.DB); err != nil && !isCanceled(err) && !m.hostDead(h) {
				m.log.Warn("purge the binary log", "instance", h.ID(), "err", err)
			}
		})
	}
}

// leasedDB is a leased database and its lease, as checkSpace sees them:
// the bytes of its files, and those of its writes in the binary log when
// that was read.
type leasedDB struct {
	l      *lease
	db     *workerDB
	bytes  int64
	logged int64
}

// checkSpace fails the leases that use more space than they may.
func (m *Manager) checkSpace() {
	m.mu.Lock()
	byHost := map[*host][]leasedDB{}
	for _, l := range m.leases {
		if h := l.db.rep.host; !h.dead {
			byHost[h] = append(byHost[h], leasedDB{l: l, db: l.db})
		}
	}
	m.mu.Unlock()
	for h, dbs := range byHost {
		m.checkHostSpace(h, dbs)
	}
}

// checkHostSpace checks the leased databases dbs of server h.
func (m *Manager) checkHostSpace(h *host, dbs []leasedDB) {
	usage, ok := h.DatadirUsage()
	if !ok {
		return // not visible (e.g. a pod): the cap is not enforced there
	}
	var victims []leasedDB
	for i := range dbs {
		dbs[i].bytes, _ = h.DatabaseBytes(dbs[i].db.name)
		if dbs[i].bytes > m.cfg.LeaseSpace {
			victims = append(victims, dbs[i])
		}
	}
	reason := func(d leasedDB) string {
		return fmt.Sprintf("its database %s grew to %dM, over the space a lease may use (--lease-space=%dM); it was dropped",
			d.db.name, d.bytes>>20, m.cfg.LeaseSpace>>20)
	}
	m.mu.Lock()
	busy := h.spaceBusy
	reserve := max(m.cfg.SpaceReserve, usage.Size/10, minReserve)
	m.mu.Unlock()
	short := false
	if len(victims) == 0 && usage.Free < reserve && len(dbs) > 0 && !busy {
		var v leasedDB
		if v, usage, short = m.reserveVictim(h, dbs, reserve); short {
			victims = []leasedDB{v}
			reason = func(d leasedDB) string {
				return fmt.Sprintf("server instance %s had %dM free, less than its reserve of %dM (--space-reserve), and this lease took the most space on it: %dM, its database %s's files (%dM) and what it wrote to the binary log that was not purged yet (%dM); it was dropped",
					h.ID(), usage.Free>>20, reserve>>20, (d.bytes+d.logged)>>20, d.db.name, d.bytes>>20, d.logged>>20)
			}
		}
	}
	for _, v := range victims {
		m.mu.Lock()
		if v.l.state == LeaseActive {
			m.log.Warn("lease failed for space", "lease", v.l.id, "database", v.db.name, "bytes", v.bytes, "logged", v.logged)
			m.event("error", "lease_failed", "lease "+v.l.id+" failed: "+reason(v), v.l.tpl.name, v.l.id, h.ID(), v.db.name)
			m.endLeaseLocked(v.l, LeaseFailed, reason(v))
			var after func(context.Context)
			if short {
				h.spaceBusy = true
				after = func(ctx context.Context) { m.recoverSpace(ctx, h) }
			}
			m.discardLocked(v.db, "space", after)
		}
		m.mu.Unlock()
	}
}

// reserveVictim is called when server h has less free space than reserve.
// It purges the binary log first, and if the server is still short,
// returns the lease among dbs that takes the most space, its database's
// files and its writes in the log together, and the usage measured after
// the purge.
func (m *Manager) reserveVictim(h *host, dbs []leasedDB, reserve int64) (leasedDB, instance.Usage, bool) {
	if h.binlog != nil {
		if err := h.binlog.TidyNow(m.ctx, h.DB); err != nil && !isCanceled(err) && !m.hostDead(h) {
			m.log.Warn("purge the binary log to get space back", "instance", h.ID(), "err", err)
		}
		written, err := h.binlog.Written(m.ctx, h.DB)
		if err != nil && !isCanceled(err) && !m.hostDead(h) {
			m.log.Warn("read whose writes the binary log holds", "instance", h.ID(), "err", err)
		}
		for i := range dbs {
			dbs[i].logged = written[dbs[i].db.name]
		}
	}
	usage, ok := h.DatadirUsage()
	if !ok || usage.Free >= reserve {
		return leasedDB{}, usage, false
	}
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].bytes+dbs[i].logged > dbs[j].bytes+dbs[j].logged })
	return dbs[0], usage, true
}

// discardLocked removes db from its pool, ends its user's sessions and
// drops it with its accounts, in the background; then, if after is not
// nil, it runs after.
func (m *Manager) discardLocked(db *workerDB, why string, after func(context.Context)) {
	m.removeDBLocked(db)
	st, user := db.rep.host, db.user
	if st.dead {
		return
	}
	m.goBackground(func(ctx context.Context) {
		if user != "" {
			if conn, err := st.DB.Conn(ctx); err == nil {
				_ = accounts.Drop(ctx, conn, user)
				_, _ = accounts.EndSessions(ctx, conn, st.Flavor, user, false)
				conn.Close()
			}
		}
		m.dropDatabaseNow(ctx, st, db.name, why, db.owner)
		if after != nil {
			after(ctx)
		}
	})
	m.kickFill()
}

// recoverSpace purges h's binary log, which still holds what the lease
// just dropped for the reserve wrote, and lets the reserve fail another
// lease on h again.
func (m *Manager) recoverSpace(ctx context.Context, h *host) {
	if h.binlog != nil && !m.hostDead(h) {
		if err := h.binlog.TidyNow(ctx, h.DB); err != nil && !isCanceled(err) && !m.hostDead(h) {
			m.log.Warn("purge the binary log to get space back", "instance", h.ID(), "err", err)
		}
	}
	m.mu.Lock()
	h.spaceBusy = false
	m.mu.Unlock()
}

// tooBig reports whether db, just reset, takes so much more space than
// its template database that it should be dropped and made again rather
// than handed out: resets empty tables but do not shrink their files, and
// the next lease would start with the space the last one took (against
// its cap, and first in line when the server runs short). It may keep
// grownSlack beyond its template's size. Making the database again is
// done in the background and costs about one more reset: a release whose
// database was made again was back in the pool in 36 to 54 ms, against
// 12 to 43 ms for those handed out again (the examples' template, 448 KB,
// native MariaDB); for a larger template it costs about what copying its
// rows does, so a database may keep an eighth of a large template's size
// more: a test that wrote that much took longer than the copy.
func (m *Manager) tooBig(db *workerDB) bool {
	n, ok := db.rep.host.DatabaseBytes(db.name)
	return ok && n > db.rep.bytes+max(grownSlack, db.rep.bytes/8)
}

// grownSlack is the most a recycled database may have grown past its
// template's size and still be handed out: 1.5% of the default
// --lease-space. A test that adds a few thousand rows grows its tables by
// a megabyte or two (InnoDB extends a file by a megabyte at a time).
const grownSlack = 8 << 20
