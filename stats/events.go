package stats

import (
	"time"

	"github.com/testdbd/testdbd"
)

// recent is how many resets and how many events are kept for ListEvents.
const recent = 256

// ResetEvent is one reset the daemon ran, successful or not.
type ResetEvent struct {
	Seq        int64
	At         time.Time
	Template   string
	InstanceID string
	Trigger    string // "reset" (asked for), "release" or "expiry" (a recycle)
	Report     testdbd.ResetReport
	Err        string // why it failed; "" when it succeeded
}

// Event is something an operator should know about.
type Event struct {
	Seq        int64
	At         time.Time
	Level      string // "error" or "warning"
	Kind       string // e.g. "clone_failed", "instance_died"
	Message    string
	Template   string
	LeaseID    string
	InstanceID string
	Database   string
}

// RecordReset keeps e (its Seq and At are set here).
func (s *Recorder) RecordReset(e ResetEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e.Seq, e.At = s.seq, time.Now()
	s.resetLog = append(s.resetLog, e)
	if len(s.resetLog) > recent {
		s.resetLog = s.resetLog[len(s.resetLog)-recent:]
	}
}

// RecordEvent keeps e (its Seq and At are set here).
func (s *Recorder) RecordEvent(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e.Seq, e.At = s.seq, time.Now()
	s.eventLog = append(s.eventLog, e)
	if len(s.eventLog) > recent {
		s.eventLog = s.eventLog[len(s.eventLog)-recent:]
	}
}

// Recent returns up to limit of the newest resets and events whose Seq is
// above after, newest first.
func (s *Recorder) Recent(limit int, after int64) ([]ResetEvent, []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resets := []ResetEvent{}
	for i := len(s.resetLog) - 1; i >= 0 && len(resets) < limit && s.resetLog[i].Seq > after; i-- {
		resets = append(resets, s.resetLog[i])
	}
	events := []Event{}
	for i := len(s.eventLog) - 1; i >= 0 && len(events) < limit && s.eventLog[i].Seq > after; i-- {
		events = append(events, s.eventLog[i])
	}
	return resets, events
}
