package main

// Plan is how much of everything a run measures. The full plan is sized to
// finish in under 10 minutes on a 2-core machine; the quick plan, in under a
// minute, exercises every phase with few samples (CI runs it so the
// benchmark never rots).
type Plan struct {
	Quick     bool `json:"quick"`
	Tables    int  `json:"tables"`     // tables of the standard workload
	BigTables int  `json:"big_tables"` // tables of the scale comparison

	// Reset latency: Batches rounds; in each, every variant in turn (the
	// order rotates and reverses from batch to batch) runs Warmup untimed
	// and PerBatch timed test+reset pairs; the migrate-from-scratch
	// variants, which take seconds, run FreshPerBatch timed pairs.
	Batches       int `json:"batches"`
	Warmup        int `json:"warmup"`
	PerBatch      int `json:"per_batch"`
	FreshPerBatch int `json:"fresh_per_batch"`

	// Scale: the same protocol at Tables and BigTables tables.
	ScaleBatches  int `json:"scale_batches"`
	ScalePerBatch int `json:"scale_per_batch"`

	// Acquire: AcquireRounds rounds, each with every level of concurrency
	// (Singles sequential acquires for 1 client, one simultaneous burst for
	// the others), after AcquireWarmup untimed rounds.
	AcquireLevels []int `json:"acquire_levels"`
	AcquireRounds int   `json:"acquire_rounds"`
	AcquireWarmup int   `json:"acquire_warmup"`
	Singles       int   `json:"singles"`

	// Throughput: Workers clients loop acquire → write → release for
	// Seconds, Reps times per strategy, interleaved.
	ThroughputWorkers int     `json:"throughput_workers"`
	ThroughputSeconds float64 `json:"throughput_seconds"`
	ThroughputReps    int     `json:"throughput_reps"`

	// Cold start: one start on an empty state directory, then Restarts
	// starts reusing it; each builds the template and waits for ColdReady
	// ready worker databases.
	Restarts  int `json:"restarts"`
	ColdReady int `json:"cold_ready"`

	// Suite: SuiteTests tests split over each count of SuiteWorkers,
	// SuiteReps times per variant, interleaved.
	SuiteTests   int   `json:"suite_tests"`
	SuiteWorkers []int `json:"suite_workers"`
	SuiteReps    int   `json:"suite_reps"`

	// Cache: a template of CacheMigrations migration files is built by one
	// daemon, which saves it in a cache directory; CacheRestores daemons,
	// each with a state directory of its own and the same cache directory,
	// then get it from the cache.
	CacheMigrations int `json:"cache_migrations"`
	CacheRestores   int `json:"cache_restores"`

	// Concurrent: ConcurrentPerStrategy leases of each strategy on one
	// server run ConcurrentRounds test → reset pairs, one lease at a time,
	// then all at once; a DDLShare of the tests change the schema.
	ConcurrentPerStrategy int     `json:"concurrent_per_strategy"`
	ConcurrentRounds      int     `json:"concurrent_rounds"`
	DDLShare              float64 `json:"ddl_share"`

	// Engines: the reset latency phase's testdbd variants and their floors
	// on each of these engines, each on a daemon of its own serving it in
	// Docker containers (--provider docker --image), interleaved in
	// EngineBatches batches of Warmup untimed and EnginePerBatch timed
	// samples per variant.
	Engines        []EngineImage `json:"engines,omitempty"`
	EngineBatches  int           `json:"engine_batches,omitempty"`
	EnginePerBatch int           `json:"engine_per_batch,omitempty"`

	// ResetPool is the pool of the daemon the reset latency and the suite
	// run on: as many worker databases as the suite's parallel workers.
	ResetPool int `json:"reset_pool"`
	// PoolSize is the pool of the daemon acquire and throughput run on: the
	// largest acquire level plus room.
	PoolSize int `json:"pool_size"`
}

func fullPlan() Plan {
	return Plan{
		Tables: 100, BigTables: 1000,
		Batches: 15, Warmup: 2, PerBatch: 10, FreshPerBatch: 1,
		ScaleBatches: 10, ScalePerBatch: 10,
		AcquireLevels: []int{1, 8, 32}, AcquireRounds: 25, AcquireWarmup: 2, Singles: 8,
		ThroughputWorkers: 8, ThroughputSeconds: 4, ThroughputReps: 3,
		Restarts: 3, ColdReady: 8,
		SuiteTests: 160, SuiteWorkers: []int{1, 8}, SuiteReps: 3,
		CacheMigrations: 300, CacheRestores: 3,
		ConcurrentPerStrategy: 4, ConcurrentRounds: 40, DDLShare: 0.05,
		Engines: dockerEngines, EngineBatches: 6, EnginePerBatch: 8,
		ResetPool: 8, PoolSize: 40,
	}
}

func quickPlan() Plan {
	return Plan{
		Quick:  true,
		Tables: 100, BigTables: 1000,
		Batches: 2, Warmup: 1, PerBatch: 4, FreshPerBatch: 1,
		ScaleBatches: 2, ScalePerBatch: 3,
		AcquireLevels: []int{1, 8, 32}, AcquireRounds: 2, AcquireWarmup: 1, Singles: 4,
		ThroughputWorkers: 8, ThroughputSeconds: 1, ThroughputReps: 1,
		Restarts: 1, ColdReady: 8,
		SuiteTests: 16, SuiteWorkers: []int{1, 4}, SuiteReps: 1,
		CacheMigrations: 30, CacheRestores: 1,
		ConcurrentPerStrategy: 2, ConcurrentRounds: 5, DDLShare: 0.05,
		Engines: dockerEngines[2:], EngineBatches: 2, EnginePerBatch: 2,
		ResetPool: 8, PoolSize: 40,
	}
}

// EngineImage is an engine the engines phase measures: the server image a
// daemon serves it from, and the name the report gives it.
type EngineImage struct {
	ID    string `json:"id"`
	Image string `json:"image"`
}

// dockerEngines are the server images `make images` builds, MySQL last
// (the quick plan measures it alone).
var dockerEngines = []EngineImage{
	{"mariadb-10.11", "testdbd/mariadb:10.11-local"},
	{"mariadb-11.8", "testdbd/mariadb:11.8-local"},
	{"mysql-9.7", "testdbd/mysql:9.7-local"},
}
