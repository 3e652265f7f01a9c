package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/testdbd/testdbd/client"
)

// formatVersion is the version of the results file's layout.
const formatVersion = 2

// Results is everything one run measured: the raw samples, the plan that
// produced them and the machine they ran on. The report is computed from it
// alone, so `bench report` recomputes every table without rerunning anything.
type Results struct {
	Format  int     `json:"format"`
	Command string  `json:"command"` // how the run was started
	Started string  `json:"started"` // RFC 3339, UTC
	Seconds float64 `json:"seconds"` // wall time of the whole run
	Machine Machine `json:"machine"`
	Plan    Plan    `json:"plan"`

	// Servers are the servers the baselines ran on and the daemon's, with
	// the durability settings read back from each.
	Servers []ServerInfo `json:"servers"`
	// Templates are the templates the daemons built, with build timings.
	Templates []TemplateBuild `json:"templates"`
	// ColdStarts are daemon start → template built → worker databases ready.
	ColdStarts []ColdStart `json:"cold_starts"`
	// Resets are the reset-latency samples of every variant, interleaved.
	Resets []ResetSample `json:"resets"`
	// Scale are reset samples at 100 and 1,000 tables with the same test.
	Scale []ResetSample `json:"scale"`
	// EngineResets are the engines phase's reset samples, each variant's
	// name ending with " @" and the engine's ID; EngineServers are the
	// servers they ran on.
	EngineResets  []ResetSample  `json:"engine_resets,omitempty"`
	EngineServers []EngineServer `json:"engine_servers,omitempty"`
	// BigRows are reset samples after adding rows to two big tables or to
	// two small ones (the big-tables phase).
	BigRows []ResetSample `json:"big_rows"`
	// Acquires are acquire latencies from a ready pool.
	Acquires []AcquireSample `json:"acquires"`
	// Throughput are the acquire → write → release loops.
	Throughput []ThroughputRun `json:"throughput"`
	// Suite are the synthetic suite's runs.
	Suite []SuiteRun `json:"suite"`
	// Concurrent are the concurrent phase's resets.
	Concurrent []ConcurrentSample `json:"concurrent"`
	// ConcurrentCPU is the CPU time each mode of the concurrent phase used.
	ConcurrentCPU []ConcurrentCPU `json:"concurrent_cpu,omitempty"`
	// Cache are the template-cache runs: the build that filled the cache,
	// then the restores from it by other daemons.
	Cache []CacheRun `json:"cache"`
	// Failures are the phases that failed, and why; the run went on.
	Failures []Failure `json:"failures"`
	// DaemonStats is GET /v1/stats of each daemon ("reset": the reset and
	// suite phases, "pool": acquire and throughput) at the end of its phases.
	DaemonStats map[string]json.RawMessage `json:"daemon_stats,omitempty"`
}

// Failure is a phase that could not be completed.
type Failure struct {
	Phase string `json:"phase"`
	Error string `json:"error"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU            string  `json:"cpu"`   // model name from /proc/cpuinfo
	Cores          int     `json:"cores"` // logical CPUs the benchmark could use
	MemoryBytes    int64   `json:"memory_bytes"`
	Kernel         string  `json:"kernel"`
	OS             string  `json:"os"`
	Server         string  `json:"server"` // the MariaDB/MySQL binary's version
	Go             string  `json:"go"`
	Testdbd        string  `json:"testdbd"` // `testdbd version` of the daemon measured
	LoadStart      string  `json:"load_start"`
	LoadEnd        string  `json:"load_end"`
	OtherServers   int     `json:"other_servers"`  // mariadbd/mysqld processes running that this run did not start
	DiskPath       string  `json:"disk_path"`      // where the disk-backed datadir lived
	DiskFsyncMs    float64 `json:"disk_fsync_ms"`  // median of 16 KiB write + fsync on DiskPath
	TmpfsFsyncMs   float64 `json:"tmpfs_fsync_ms"` // the same on /dev/shm
	DiskFsyncCount int     `json:"disk_fsync_count"`
}

// ServerInfo is one server a variant ran on.
type ServerInfo struct {
	Name     string            `json:"name"`
	Datadir  string            `json:"datadir"`
	OnTmpfs  bool              `json:"on_tmpfs"`
	Settings map[string]string `json:"settings"` // read back with SELECT @@GLOBAL.x
}

// EngineServer is the server of one engine of the engines phase.
type EngineServer struct {
	ID      string `json:"id"`
	Image   string `json:"image"`
	Version string `json:"version"` // SELECT VERSION()
	OnTmpfs bool   `json:"on_tmpfs"`
}

// TemplateBuild is one template a daemon built.
type TemplateBuild struct {
	Daemon   string       `json:"daemon"`
	Name     string       `json:"name"`
	Tables   int          `json:"tables"`
	Pool     int          `json:"pool"`      // worker databases the daemon kept
	ClientMs float64      `json:"client_ms"` // POST /v1/templates as the client saw it
	Build    BuildTimings `json:"build"`
}

// BuildTimings are the daemon's own build phases.
type BuildTimings = client.BuildTimings

// CacheRun is one POST /v1/templates of the migration history on a fresh
// daemon: the first built it (Source "migrations"), the others found it in
// the cache directory (Source "cache").
type CacheRun struct {
	Run        int          `json:"run"`
	Source     string       `json:"source"`
	Migrations int          `json:"migrations"`
	Tables     int          `json:"tables"`
	ClientMs   float64      `json:"client_ms"` // POST /v1/templates as the client saw it
	Build      BuildTimings `json:"build"`
}

// ColdStart is one daemon start, timed from just before the process starts.
type ColdStart struct {
	Kind            string       `json:"kind"` // "first" (empty state dir) or "restart" (state dir reused)
	Run             int          `json:"run"`
	ServingMs       float64      `json:"serving_ms"`  // the daemon logged it serves (its --warm server is up)
	TemplateMs      float64      `json:"template_ms"` // POST /v1/templates returned: template built
	ReadyMs         float64      `json:"ready_ms"`    // GET /v1/templates showed pool ready ≥ Ready
	Ready           int          `json:"ready"`
	Build           BuildTimings `json:"build"`
	InstanceStartMs float64      `json:"instance_start_ms"`
	RSSEmptyBytes   int64        `json:"rss_empty_bytes"` // the server right after the daemon serves
	RSSReadyBytes   int64        `json:"rss_ready_bytes"` // the same server 1 s after the pool was ready, idle
	StopMs          float64      `json:"stop_ms"`         // SIGTERM → exit
}

// ResetSample is one test followed by one reset, timed around the reset
// only.
type ResetSample struct {
	Variant string `json:"variant"`
	Batch   int    `json:"batch"` // -1: the warm-up before the first batch
	Warmup  bool   `json:"warmup,omitempty"`
	// ClientMs is the wall time of the reset as the client saw it; for the
	// essentials variants, the sum of their parts (floorVariant.reset).
	ClientMs float64 `json:"client_ms"`
	// ServerMs is the daemon's own total_ms (testdbd variants).
	ServerMs float64 `json:"server_ms,omitempty"`
	// PhasesMs are the daemon's phases: sessions, detect, verify, restore,
	// schema (testdbd variants); for the essentials variants, the REST
	// round trip, the INNODB_SYS_TABLESTATS read (0: not read), the
	// restore, the information_schema.TABLES read and the statistics put
	// back (0: none; absent from runs before it was timed).
	PhasesMs []float64 `json:"phases_ms,omitempty"`
	// Tables is the number of tables truncated (baselines) or restored
	// (testdbd).
	Tables   int    `json:"tables"`
	Fallback string `json:"fallback,omitempty"`
	// Delta is the number of tables restored by deleting the rows the test
	// added (tables_delta).
	Delta int `json:"delta,omitempty"`
	// CPU time, in ms, of the database server during the reset
	// (ServerCPUMs) and during the test before it (TestCPUMs), and of the
	// daemon during the reset (testdbd variants); see cpuMs.
	ServerCPUMs float64 `json:"server_cpu_ms,omitempty"`
	TestCPUMs   float64 `json:"test_cpu_ms,omitempty"`
	DaemonCPUMs float64 `json:"daemon_cpu_ms,omitempty"`
}

// AcquireSample is one acquire from a ready pool, or (Health) one
// GET /healthz of a round of as many clients after the acquires' round:
// the REST round trip's floor at that concurrency.
type AcquireSample struct {
	Clients  int     `json:"clients"` // concurrent clients in the round
	Health   bool    `json:"health,omitempty"`
	Round    int     `json:"round"`
	Warmup   bool    `json:"warmup,omitempty"`
	ClientMs float64 `json:"client_ms"`
	WaitedMs float64 `json:"waited_ms"` // the daemon's waited_ms (0 when a database was ready)
}

// ThroughputRun is Workers clients looping acquire → write → release for
// Seconds.
type ThroughputRun struct {
	Strategy string  `json:"strategy"`
	Rep      int     `json:"rep"`
	Workers  int     `json:"workers"`
	Seconds  float64 `json:"seconds"`
	// Handed counts the loops that completed (acquire, write, release)
	// within Seconds; PerBucket splits them by 100 ms of completion time.
	Handed    int   `json:"handed"`
	PerBucket []int `json:"per_100ms"`
	Errors    int   `json:"errors"`
	// Waited counts the acquires the daemon could not serve from a ready
	// database at once.
	Waited int `json:"waited"`
	// Medians of the loops' parts: acquire (REST), connect + test +
	// disconnect, release (REST); milliseconds.
	AcquireMs float64 `json:"acquire_ms"`
	WorkMs    float64 `json:"work_ms"`
	ReleaseMs float64 `json:"release_ms"`
	// Loops counts every loop that completed, also after Seconds; the CPU
	// times, in ms, are the server's, the daemon's and the benchmark's
	// own (the workers) from the start until the daemon had recycled
	// every released database: the cost of Loops clean databases.
	Loops int `json:"loops,omitempty"`
	// StatsPutBack counts, for a least loop, the recycles that found
	// statistics other than the template's and put them back.
	StatsPutBack int     `json:"stats_put_back,omitempty"`
	ServerCPUMs  float64 `json:"server_cpu_ms,omitempty"`
	DaemonCPUMs  float64 `json:"daemon_cpu_ms,omitempty"`
	BenchCPUMs   float64 `json:"bench_cpu_ms,omitempty"`
}

// SuiteRun is one synthetic suite: Tests tests split over Workers workers.
type SuiteRun struct {
	Variant string  `json:"variant"`
	Workers int     `json:"workers"`
	Tests   int     `json:"tests"`
	Rep     int     `json:"rep"`
	WallMs  float64 `json:"wall_ms"`  // first worker starts → last worker done
	SetupMs float64 `json:"setup_ms"` // the slowest worker's setup (migrate:fresh or acquire)
}

// writeResults writes r with one sample per line: small enough to commit,
// easy to diff and to read.
func writeResults(path string, r *Results) error {
	var buf bytes.Buffer
	buf.WriteString("{\n")
	v := reflect.ValueOf(*r)
	t := v.Type()
	first := true
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		name := t.Field(i).Tag.Get("json")
		omitEmpty := false
		if n, opts, ok := strings.Cut(name, ","); ok {
			name, omitEmpty = n, opts == "omitempty"
		}
		if omitEmpty && f.IsZero() {
			continue
		}
		if !first {
			buf.WriteString(",\n")
		}
		first = false
		fmt.Fprintf(&buf, "  %q: ", name)
		if f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct {
			buf.WriteString("[")
			for j := 0; j < f.Len(); j++ {
				b, err := json.Marshal(f.Index(j).Interface())
				if err != nil {
					return err
				}
				if j > 0 {
					buf.WriteString(",")
				}
				buf.WriteString("\n    ")
				buf.Write(b)
			}
			if f.Len() > 0 {
				buf.WriteString("\n  ")
			}
			buf.WriteString("]")
			continue
		}
		b, err := json.MarshalIndent(f.Interface(), "  ", "  ")
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteString("\n}\n")
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Format != formatVersion {
		return nil, fmt.Errorf("%s: results format %d, this report reads %d", path, r.Format, formatVersion)
	}
	return &r, nil
}

// ConcurrentCPU is the CPU time, in ms, of the server, the daemon and the
// benchmark (the leases' clients) over one mode of the concurrent phase
// ("alone", "together"): Rounds tests and resets in WallMs.
type ConcurrentCPU struct {
	Mode        string  `json:"mode"`
	Rounds      int     `json:"rounds"`
	WallMs      float64 `json:"wall_ms"`
	ServerCPUMs float64 `json:"server_cpu_ms"`
	DaemonCPUMs float64 `json:"daemon_cpu_ms"`
	BenchCPUMs  float64 `json:"bench_cpu_ms"`
}
