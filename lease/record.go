package lease

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
)

// The lease record: a file in the state directory (Config.LeaseRecord)
// that holds the ids of the live leases, so that a daemon started again
// after a shutdown, a crash or kill -9 can tell a caller who still holds
// one what became of it ("ended when the daemon restarted at …") instead
// of "no lease". It is a log of lines, appended as leases begin
// ("+l-…") and end ("-l-…"), and "stop <time>" when the daemon shuts
// down: one write(2) of about 20 bytes per change, to the page cache
// (no fsync: what a killed daemon wrote is in the kernel's hands, and a
// machine that crashes loses the servers' tmpfs data anyway). When it
// has grown to many times the live leases it is rewritten with those
// alone. A daemon that starts reads it, remembers the leases it names as
// lost (the last maxEnded of them) and starts it afresh.

// recordCompactAt is how many lines the record may hold before it is
// rewritten with the live leases alone (when they are far fewer).
const recordCompactAt = 4096

// leaseRecord is the open lease record; its methods are called with m.mu
// held.
type leaseRecord struct {
	path   string
	f      *os.File
	lines  int  // lines in the file
	failed bool // a write failed: the record is off (logged once)
}

// lostLease is a lease the daemon held before it restarted.
type lostLease struct {
	restarted time.Time // when this daemon started
	stopped   time.Time // when the previous one shut down (zero: it did not, it was killed)
}

// openRecord reads the record at path, returns the leases it names as live
// and when the daemon that wrote it shut down (zero if it did not), and
// starts the record afresh (no lease is live in a daemon that starts).
func openRecord(path string) (*leaseRecord, []string, time.Time, error) {
	live, stopped, err := readRecord(path)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("lease record: %w", err)
	}
	return &leaseRecord{path: path, f: f}, live, stopped, nil
}

// readRecord returns the live leases of the record at path, in the order
// they began, and the time of its "stop" line.
func readRecord(path string) ([]string, time.Time, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("lease record: %w", err)
	}
	defer f.Close()
	var order []string
	live := map[string]bool{}
	var stopped time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "+"):
			if id := line[1:]; !live[id] {
				live[id] = true
				order = append(order, id)
			}
		case strings.HasPrefix(line, "-"):
			delete(live, line[1:])
		case strings.HasPrefix(line, "stop "):
			stopped, _ = time.Parse(time.RFC3339Nano, line[len("stop "):])
		}
	}
	var out []string
	for _, id := range order {
		if live[id] {
			out = append(out, id)
		}
	}
	if len(out) > maxEnded {
		out = out[len(out)-maxEnded:]
	}
	return out, stopped, sc.Err()
}

// write appends a line; the first failure turns the record off.
func (r *leaseRecord) write(line string) error {
	if r == nil || r.failed {
		return nil
	}
	if _, err := r.f.WriteString(line + "\n"); err != nil {
		r.failed = true
		return fmt.Errorf("write the lease record %s (a daemon restarted now could not say what became of its leases): %w", r.path, err)
	}
	r.lines++
	return nil
}

// compact rewrites the record with the live leases alone when it has
// grown to many times their number.
func (r *leaseRecord) compact(live map[string]*lease) error {
	if r == nil || r.failed || r.lines < recordCompactAt || r.lines < 4*len(live) {
		return nil
	}
	var b strings.Builder
	for id := range live {
		b.WriteString("+" + id + "\n")
	}
	tmp := r.path + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		r.failed = true
		return fmt.Errorf("rewrite the lease record %s: %w", r.path, err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		r.failed = true
		return fmt.Errorf("rewrite the lease record %s: %w", r.path, err)
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		r.failed = true
		return fmt.Errorf("reopen the lease record %s: %w", r.path, err)
	}
	r.f.Close()
	r.f, r.lines = f, len(live)
	return nil
}

// close writes the stop line and closes the record.
func (r *leaseRecord) close(now time.Time) error {
	if r == nil {
		return nil
	}
	err := r.write("stop " + now.UTC().Format(time.RFC3339Nano))
	r.f.Close()
	return err
}

// recordLocked notes in the record that the lease id began (+) or ended
// (-).
func (m *Manager) recordLocked(sign, id string) {
	err := m.record.write(sign + id)
	if err == nil && sign == "-" {
		err = m.record.compact(m.leases)
	}
	if err != nil {
		m.log.Warn("lease record off", "err", err)
	}
}

// openRecord reads the lease record a previous daemon left and remembers
// its live leases as lost in the restart.
func (m *Manager) openRecord() {
	if m.cfg.LeaseRecord == "" {
		return
	}
	r, live, stopped, err := openRecord(m.cfg.LeaseRecord)
	if err != nil {
		m.log.Warn("lease record off: a restarted daemon will not know the leases of this one", "err", err)
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record = r
	for _, id := range live {
		m.lost[id] = lostLease{restarted: now, stopped: stopped}
	}
	if len(live) > 0 {
		m.log.Info("leases of the previous daemon ended with it", "leases", len(live), "shut_down", !stopped.IsZero())
	}
}

// lostReason says what became of a lease lost in a restart.
func (l lostLease) reason() string {
	why := "ended when the daemon restarted at " + l.restarted.UTC().Format(time.RFC3339)
	if !l.stopped.IsZero() {
		why += " (it had shut down at " + l.stopped.UTC().Format(time.RFC3339) + ")"
	} else {
		why += " (it had stopped without shutting down: killed, or its machine restarted)"
	}
	return why
}

// info describes the lost lease id as Get and Release return it.
func (l lostLease) info(id string) LeaseInfo {
	return LeaseInfo{ID: id, State: LeaseFailed, EndedReason: l.reason() + "; acquire a new one"}
}

// err is the error of a call that needs the lost lease id active.
func (l lostLease) err(id string) error {
	return testdbd.Errorf(testdbd.EUnavailable, "lease %s %s; acquire a new one", id, l.reason())
}
