package lease

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/templates"
)

// Backoff of a template whose databases cannot be made: the first retry
// after minBackoff, doubling up to maxBackoff.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// health is whether a template can make databases now.
type health struct {
	failures int       // making a database (or a replica) failed this many times in a row
	trouble  string    // the last failure, "" after a success
	retryAt  time.Time // the filler tries again no sooner
	hurried  time.Time // an ensure last moved retryAt to now (healLocked)
}

// backoff is how long the filler waits after failures failures in a row.
func backoff(failures int) time.Duration {
	return min(minBackoff<<min(max(failures, 1)-1, 16), maxBackoff)
}

// troubleLocked records that making a database of t on rep's server (rep
// nil: building a replica) failed with err: t backs off exponentially, its
// waiters get the error now instead of a timeout, and a template database
// found missing or damaged is forgotten so that the filler builds it again.
func (m *Manager) troubleLocked(t *template, rep *replica, err error) {
	h := &t.health
	h.failures++
	h.trouble = err.Error()
	h.retryAt = time.Now().Add(backoff(h.failures))
	if rep != nil && templateBroken(err, rep.db) && t.replicas[rep.host.ID()] == rep {
		m.log.Warn("the template database is missing or damaged; building it again", "template", t.name,
			"database", rep.db, "instance", rep.host.ID(), "err", err)
		m.forgetReplicaLocked(t, rep)
	}
	reason := fmt.Sprintf("template %s cannot make databases now: %s (%s)", t.name, h.trouble, retryIn(h.retryAt))
	for _, w := range t.waiters {
		w.reason = reason
		close(w.gone)
	}
	t.waiters = nil
}

// healthyLocked records that t made a database.
func (t *template) healthyLocked() { t.health = health{} }

// troubledLocked says why an acquire of t cannot wait for a database, or "".
func (t *template) troubledLocked() string {
	if t.health.trouble == "" {
		return ""
	}
	return fmt.Sprintf("template %s cannot make databases now: %s (%s)", t.name, t.health.trouble, retryIn(t.health.retryAt))
}

// retryIn says when the filler tries again a template it backs off from
// until at: in so long, or now once at has passed (the filler looks at
// its templates every second, and at once when kicked).
func retryIn(at time.Time) string {
	if d := time.Until(at); d >= time.Millisecond {
		return "testdbd tries again in " + d.Round(time.Millisecond).String()
	}
	return "testdbd is trying again now"
}

// healLocked is an ensure of t, a ready template, again: when t cannot
// make databases, the filler tries again now instead of after its backoff
// (the caller asks for it; a server it lacked may be back), at most once
// per backoff period, and the failures still count, so that callers
// ensuring in a loop cannot turn the backoff into a storm of builds.
func (m *Manager) healLocked(t *template) {
	h := &t.health
	if h.trouble != "" && time.Since(h.hurried) >= backoff(h.failures) {
		m.log.Info("template ensured again while it cannot make databases: trying again now", "template", t.name,
			"hash", templates.Short(t.hash), "trouble", h.trouble)
		h.retryAt, h.hurried = time.Now(), time.Now()
	}
	m.kickFill()
}

// strandedLocked reports whether t is ready but can never make databases
// again: no server holds it, and neither the template cache nor
// migrations the daemon has can make it (an external build whose servers
// died, with no cache; a replica being built can only fail): the caller
// builds it again.
func (m *Manager) strandedLocked(t *template) bool {
	return t.state == templates.Ready && len(t.replicas) == 0 &&
		t.source != templates.SourceMigrations && t.cachedSource != templates.SourceMigrations && !m.cache.Has(t.hash)
}

// backingOffLocked reports whether the filler must not try t yet.
func (t *template) backingOffLocked() bool {
	return t.health.trouble != "" && time.Now().Before(t.health.retryAt)
}

// forgetReplicaLocked drops a broken template database: its idle worker
// databases go with it, leased ones when their leases end (their resets
// fail, saying so), and the filler builds a new one.
func (m *Manager) forgetReplicaLocked(t *template, rep *replica) {
	delete(t.replicas, rep.host.ID())
	rep.broken = true
	for _, db := range append([]*workerDB(nil), t.dbs...) {
		if db.rep == rep && db.state == dbReady {
			m.dropDBLocked(db, "its template database is broken")
		}
	}
	rep.host.tables -= len(rep.schema.Tables)
	m.dropDatabase(rep.host, rep.db, "template database broken", rep.owner)
}

// templateBroken reports whether err says that the template database
// tplDB is missing or lacks a table: the server's "unknown database" or
// "table doesn't exist" naming tplDB, which a clone or a restore of an
// intact template never gets. The same errors naming the worker database
// (a table its clone or restore could not make, with the server short of
// space, say) leave the template alone.
func templateBroken(err error, tplDB string) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1049: // Unknown database 'db'
		return strings.Contains(me.Message, "'"+tplDB+"'")
	case 1146: // Table 'db.table' doesn't exist
		return strings.Contains(me.Message, "'"+tplDB+".")
	}
	return false
}

// stateLocked is the state shown for t: Degraded while it is ready but
// cannot make databases.
func (t *template) stateLocked() templates.State {
	if t.state == templates.Ready && t.health.trouble != "" {
		return templates.Degraded
	}
	return t.state
}

// brokenReplicaError is the error of a reset of a database whose template
// database was found broken.
func brokenReplicaError(t *template) error {
	return testdbd.Errorf(testdbd.EUnavailable,
		"the template database of %s was lost and is being built again: release this lease and acquire a new one", t.name)
}
