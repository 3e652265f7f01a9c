package lease

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

// TestLeaseRecord: the record names the leases live at the moment it was
// left, across compactions, and a stop line when the daemon shut down.
func TestLeaseRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leases")
	r, live, stopped, err := openRecord(path)
	if err != nil || len(live) != 0 || !stopped.IsZero() {
		t.Fatalf("a new record: %v, %v, %v", live, stopped, err)
	}
	m := &Manager{record: r, leases: map[string]*lease{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := range 3 * recordCompactAt {
		id := fmt.Sprintf("l-%d", i)
		m.leases[id] = &lease{id: id}
		m.recordLocked("+", id)
		if i%3 != 0 {
			delete(m.leases, id)
			m.recordLocked("-", id)
		}
	}
	if r.lines >= recordCompactAt+len(m.leases) {
		t.Errorf("the record holds %d lines for %d live leases: it was not compacted", r.lines, len(m.leases))
	}
	now := time.Now()
	if err := r.close(now); err != nil {
		t.Fatal(err)
	}
	_, live, stopped, err = openRecord(path)
	if err != nil || len(live) != len(m.leases) || !stopped.Equal(now.UTC()) {
		t.Fatalf("reopened: %d live (want %d), stopped %v (want %v), %v", len(live), len(m.leases), stopped, now, err)
	}
	for _, id := range live {
		if m.leases[id] == nil {
			t.Errorf("%s is not live", id)
		}
	}
}

// BenchmarkLeaseRecord measures what the record adds to a lease's life:
// a line when it begins and one when it ends (under the manager's lock).
func BenchmarkLeaseRecord(b *testing.B) {
	r, _, _, err := openRecord(filepath.Join(b.TempDir(), "leases"))
	if err != nil {
		b.Fatal(err)
	}
	m := &Manager{record: r, leases: map[string]*lease{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("l-%016x", i)
		m.recordLocked("+", id)
		m.recordLocked("-", id)
	}
}
