package stats

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/testdbd/testdbd"
)

// window is how many recent samples the percentiles of GetStats cover.
const window = 10000

// Latency summarises recent samples.
type Latency struct {
	Count                    int64
	P50, P90, P99, Max, Mean time.Duration
}

// StrategyStats are the resets that ran a strategy.
type StrategyStats struct {
	Strategy  testdbd.Strategy
	Latency   Latency
	Fallbacks int64
	Failures  int64
}

// Snapshot is what a Recorder has counted, with latency percentiles over
// the recent samples.
type Snapshot struct {
	Resets           []StrategyStats // one per strategy, in testdbd.Strategies order
	Acquire          Latency
	AcquireWait      Latency
	LeasesAcquired   int64
	LeasesExpired    int64
	AcquireExhausted int64
}

// ring keeps the last window samples.
type ring struct {
	buf   []time.Duration
	next  int
	count int64
}

func (r *ring) add(d time.Duration) {
	if len(r.buf) < window {
		r.buf = append(r.buf, d)
	} else {
		r.buf[r.next] = d
		r.next = (r.next + 1) % window
	}
	r.count++
}

func (r *ring) summary() Latency {
	l := Latency{Count: r.count}
	if len(r.buf) == 0 {
		return l
	}
	s := append([]time.Duration(nil), r.buf...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	l.P50, l.P90, l.P99, l.Max, l.Mean = at(0.50), at(0.90), at(0.99), s[len(s)-1], sum/time.Duration(len(s))
	return l
}

// Recorder holds the metrics: Prometheus collectors and the rings behind
// Snapshot.
type Recorder struct {
	mu        sync.Mutex
	seq       int64        // of the resets and events below
	resetLog  []ResetEvent // the last `recent`, oldest first
	eventLog  []Event
	resets    map[testdbd.Strategy]*ring
	fallbacks map[testdbd.Strategy]int64
	failures  map[testdbd.Strategy]int64
	acquire   ring
	wait      ring
	acquiredN int64
	expiredN  int64
	exhaustN  int64

	resetSeconds   *prometheus.HistogramVec
	phaseSeconds   *prometheus.HistogramVec
	acquireSeconds prometheus.Histogram
	waitSeconds    prometheus.Histogram
	fallbackTotal  *prometheus.CounterVec
	failureTotal   *prometheus.CounterVec
	acquiredTotal  prometheus.Counter
	expiredTotal   prometheus.Counter
	exhaustTotal   prometheus.Counter
	poolDatabases  *prometheus.GaugeVec
}

// New returns a recorder whose collectors are registered with reg (nil
// means no Prometheus metrics).
func New(reg prometheus.Registerer) *Recorder {
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 18) // 0.1 ms … 13 s
	s := &Recorder{
		resets: map[testdbd.Strategy]*ring{}, fallbacks: map[testdbd.Strategy]int64{}, failures: map[testdbd.Strategy]int64{},
		resetSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "testdbd_reset_seconds",
			Help: "Reset duration by the strategy that ran.", Buckets: buckets}, []string{"strategy"}),
		phaseSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "testdbd_reset_phase_seconds",
			Help: "Reset phase duration by strategy and phase.", Buckets: buckets}, []string{"strategy", "phase"}),
		acquireSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "testdbd_acquire_seconds",
			Help: "AcquireLease duration, waiting included.", Buckets: buckets}),
		waitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "testdbd_acquire_wait_seconds",
			Help: "Time acquires spent waiting for a free database.", Buckets: buckets}),
		fallbackTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "testdbd_reset_fallbacks_total",
			Help: "Resets that did more than the requested strategy (see fallback_reason)."}, []string{"requested"}),
		failureTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "testdbd_reset_failures_total",
			Help: "Resets that failed."}, []string{"requested"}),
		acquiredTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "testdbd_leases_acquired_total", Help: "Leases handed out."}),
		expiredTotal:  prometheus.NewCounter(prometheus.CounterOpts{Name: "testdbd_leases_expired_total", Help: "Leases that expired."}),
		exhaustTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "testdbd_acquire_exhausted_total",
			Help: "Acquires that failed with ResourceExhausted after waiting."}),
		poolDatabases: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "testdbd_pool_databases",
			Help: "Worker databases by template and state."}, []string{"template", "state"}),
	}
	if reg != nil {
		reg.MustRegister(s.resetSeconds, s.phaseSeconds, s.acquireSeconds, s.waitSeconds, s.fallbackTotal,
			s.failureTotal, s.acquiredTotal, s.expiredTotal, s.exhaustTotal, s.poolDatabases)
	}
	return s
}

// Reset records a reset: its latency by the strategy that ran, its phases,
// and whether it fell back or failed.
func (s *Recorder) Reset(r testdbd.ResetReport, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failures[r.Requested]++
		s.failureTotal.WithLabelValues(r.Requested.String()).Inc()
		return
	}
	if s.resets[r.Strategy] == nil {
		s.resets[r.Strategy] = &ring{}
	}
	s.resets[r.Strategy].add(r.Total)
	st := r.Strategy.String()
	s.resetSeconds.WithLabelValues(st).Observe(r.Total.Seconds())
	for phase, d := range map[string]time.Duration{"sessions": r.Phases.Sessions, "detect": r.Phases.Detect,
		"verify": r.Phases.Verify, "restore": r.Phases.Restore, "schema": r.Phases.Schema} {
		s.phaseSeconds.WithLabelValues(st, phase).Observe(d.Seconds())
	}
	if r.FallbackReason != "" {
		s.fallbacks[r.Requested]++
		s.fallbackTotal.WithLabelValues(r.Requested.String()).Inc()
	}
}

// Acquired records a lease handed out after total, of which waited was
// spent waiting for a free database.
func (s *Recorder) Acquired(total, waited time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acquire.add(total)
	s.acquiredN++
	s.acquireSeconds.Observe(total.Seconds())
	s.acquiredTotal.Inc()
	if waited > 0 {
		s.wait.add(waited)
		s.waitSeconds.Observe(waited.Seconds())
	}
}

// Expired records a lease that expired.
func (s *Recorder) Expired() {
	s.mu.Lock()
	s.expiredN++
	s.mu.Unlock()
	s.expiredTotal.Inc()
}

// Exhausted records an acquire that failed after waiting for capacity.
func (s *Recorder) Exhausted() {
	s.mu.Lock()
	s.exhaustN++
	s.mu.Unlock()
	s.exhaustTotal.Inc()
}

// Pool sets a template's worker databases by state (ready, leased, ...).
func (s *Recorder) Pool(template string, byState map[string]int) {
	for state, n := range byState {
		s.poolDatabases.WithLabelValues(template, state).Set(float64(n))
	}
}

// ForgetPool removes a template's pool gauges (the template is gone).
func (s *Recorder) ForgetPool(template string) {
	s.poolDatabases.DeletePartialMatch(prometheus.Labels{"template": template})
}

// Snapshot returns the counters and latency percentiles over the recent
// samples.
func (s *Recorder) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Snapshot
	for _, st := range testdbd.Strategies {
		ss := StrategyStats{Strategy: st, Fallbacks: s.fallbacks[st], Failures: s.failures[st]}
		if r := s.resets[st]; r != nil {
			ss.Latency = r.summary()
		}
		out.Resets = append(out.Resets, ss)
	}
	out.Acquire, out.AcquireWait = s.acquire.summary(), s.wait.summary()
	out.LeasesAcquired, out.LeasesExpired, out.AcquireExhausted = s.acquiredN, s.expiredN, s.exhaustN
	return out
}
