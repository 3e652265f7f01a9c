package client

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The types below mirror the REST API's JSON (the proto field names of
// testdb.v1, snake_case). Counts and byte sizes are JSON numbers, read into
// int64 fields; daemons before they were (protojson writes a 64-bit
// integer as a string) sent strings, which are read as well. The goose
// version is a 64-bit integer of any size, so it stays a string. Times in
// reports are milliseconds as float64. A test checks every type against
// the daemon's OpenAPI document, field by field.

// Strategy is how a leased database is brought back to its template. Its
// values are the API's enum names.
type Strategy string

// The strategies. StrategyUnspecified leaves the choice to the daemon (its
// --strategy flag, snapshot unless set).
const (
	StrategyUnspecified Strategy = "STRATEGY_UNSPECIFIED"
	StrategyTruncate    Strategy = "STRATEGY_TRUNCATE"
	StrategySnapshot    Strategy = "STRATEGY_SNAPSHOT"
	StrategyRollback    Strategy = "STRATEGY_ROLLBACK"
)

// ParseStrategy accepts "truncate", "snapshot", "rollback" (any case, with
// or without the STRATEGY_ prefix) and "" or "default" for the daemon's
// default.
func ParseStrategy(s string) (Strategy, error) {
	switch strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "STRATEGY_") {
	case "", "DEFAULT", "UNSPECIFIED":
		return StrategyUnspecified, nil
	case "TRUNCATE":
		return StrategyTruncate, nil
	case "SNAPSHOT":
		return StrategySnapshot, nil
	case "ROLLBACK":
		return StrategyRollback, nil
	}
	return "", fmt.Errorf("unknown strategy %q: use truncate, snapshot or rollback", s)
}

// Short returns the strategy's lower-case name ("snapshot"), or "default".
func (s Strategy) Short() string {
	switch s {
	case StrategyTruncate, StrategySnapshot, StrategyRollback:
		return strings.ToLower(strings.TrimPrefix(string(s), "STRATEGY_"))
	}
	return "default"
}

// TemplateState is where a template is in its life.
type TemplateState string

// The template states.
const (
	TemplateBuilding TemplateState = "TEMPLATE_STATE_BUILDING"
	TemplateReady    TemplateState = "TEMPLATE_STATE_READY"
	TemplateFailed   TemplateState = "TEMPLATE_STATE_FAILED"
	// TemplateDegraded is a built template that cannot make databases now;
	// Template.Error says why.
	TemplateDegraded TemplateState = "TEMPLATE_STATE_DEGRADED"
)

// MigrationFile is one uploaded goose migration file.
type MigrationFile struct {
	Name    string `json:"name"`    // file name, e.g. "00001_create_users.sql"; no path separators
	Content string `json:"content"` // the file's content
}

// EnsureTemplateRequest asks for a template built from goose migrations.
// Give either MigrationsDir (a directory on the daemon's host) or
// Migrations (files uploaded with the request).
type EnsureTemplateRequest struct {
	Name          string          `json:"name"`
	MigrationsDir string          `json:"migrations_dir,omitempty"`
	Migrations    []MigrationFile `json:"migrations,omitempty"`
	SeedSQL       string          `json:"seed_sql,omitempty"` // run after the migrations
	Engine        string          `json:"engine,omitempty"`   // "mariadb", "mysql", "mysql-9.7", ...; "" for the daemon's default
	Async         bool            `json:"async,omitempty"`    // return while still building
	PoolSize      int32           `json:"pool_size,omitempty"`
	// BuildTimeoutSeconds limits the build; 0 means the daemon's default.
	BuildTimeoutSeconds int32 `json:"build_timeout_seconds,omitempty"`
}

// Template is a database built once from migrations and seed SQL.
type Template struct {
	Name       string        `json:"name"`
	Hash       string        `json:"hash"` // content hash of everything that shapes it
	State      TemplateState `json:"state"`
	Error      string        `json:"error"` // why the build failed
	InstanceID string        `json:"instance_id"`
	Tables     int32         `json:"tables"`
	Version    int64         `json:"version,string"` // goose version reached
	Build      BuildTimings  `json:"build"`
	Pool       PoolCounts    `json:"pool"`
	Database   string        `json:"database"`
	Migrations []string      `json:"migrations"` // file names in the order they ran
	CreatedAt  time.Time     `json:"created_at"`
	Engine     string        `json:"engine"` // e.g. "mariadb 10.11.19"
	Views      int32         `json:"views"`
	Triggers   int32         `json:"triggers"`
	Routines   int32         `json:"routines"`
	Events     int32         `json:"events"`
	// Current: the name resolves to this build (the most recently ensured
	// ready one). Other live builds of the name are leased by hash.
	Current  bool          `json:"current"`
	Progress BuildProgress `json:"progress"`
	// Source is how the template came to be: "migrations", "external" (the
	// caller's migrator) or "cache".
	Source string `json:"source"`
}

// BuildTimings are a template build's phases, in milliseconds.
type BuildTimings struct {
	ProvisionMs float64 `json:"provision_ms"`
	MigrateMs   float64 `json:"migrate_ms"`
	SeedMs      float64 `json:"seed_ms"`
	CaptureMs   float64 `json:"capture_ms"`
	CloneMs     float64 `json:"clone_ms"`
	TotalMs     float64 `json:"total_ms"`
	RestoreMs   float64 `json:"restore_ms"` // from the template cache
}

// BuildProgress is where a template build is: Phase is "waiting",
// "migrating" (Step of Steps, running Migration), "seeding", "external",
// "restoring", "capturing", "cloning", "done" or "failed".
type BuildProgress struct {
	Phase     string  `json:"phase"`
	Step      int32   `json:"step"`
	Steps     int32   `json:"steps"`
	Migration string  `json:"migration"`
	ElapsedMs float64 `json:"elapsed_ms"`
}

// PoolCounts are a template's worker databases by state.
type PoolCounts struct {
	Ready     int32 `json:"ready"`
	Leased    int32 `json:"leased"`
	Resetting int32 `json:"resetting"`
	Creating  int32 `json:"creating"`
	Target    int32 `json:"target"`
}

// AcquireLeaseRequest asks for a worker database of a template.
type AcquireLeaseRequest struct {
	Template string   `json:"template"`
	Strategy Strategy `json:"strategy,omitempty"`
	// TTLSeconds is the lease's time to live; 0 means the daemon's default.
	TTLSeconds int32 `json:"ttl_seconds,omitempty"`
	// Worker is a sticky key: the same worker gets its previous database
	// back when it can.
	Worker string `json:"worker,omitempty"`
	// WaitTimeoutMs is how long to wait for a free database; 0 means the
	// daemon's default.
	WaitTimeoutMs int64 `json:"wait_timeout_ms,omitempty"`
	// MaxConnections caps the lease's connections; 0 means the daemon's
	// default.
	MaxConnections int32 `json:"max_connections,omitempty"`
	// TemplateHash pins the lease to the build of Template with this hash
	// (Template.Hash as EnsureTemplate returned it): when the name points at
	// another build the acquire fails with CodeConflict naming both hashes,
	// instead of handing out another schema. Empty means the name's current
	// build.
	TemplateHash string `json:"template_hash,omitempty"`
	// KeepAutoIncrement leaves AUTO_INCREMENT counters where the lease's
	// tests moved them instead of rewinding them to the template's at each
	// reset: ids drift from test to test, and resets skip their costliest
	// statement. Everything else is still the template's.
	KeepAutoIncrement bool `json:"keep_auto_increment,omitempty"`
}

// Lease is exclusive use of one worker database, with its own MySQL user.
type Lease struct {
	ID           string    `json:"id"`
	Template     string    `json:"template"`
	Strategy     Strategy  `json:"strategy"`
	Worker       string    `json:"worker"`
	Database     string    `json:"database"`
	Host         string    `json:"host"`
	Port         int32     `json:"port"`
	User         string    `json:"user"`
	Password     string    `json:"password"`
	DSN          string    `json:"dsn"` // go-sql-driver/mysql form: user:password@tcp(host:port)/database
	URL          string    `json:"url"` // mysql://user:password@host:port/database
	ExpiresAt    time.Time `json:"expires_at"`
	InstanceID   string    `json:"instance_id"`
	WaitedMs     float64   `json:"waited_ms"`
	State        string    `json:"state"` // "active", "released", "expired" or "failed"
	AcquiredAt   time.Time `json:"acquired_at"`
	TTLSeconds   int32     `json:"ttl_seconds"`
	Resets       int64     `json:"resets"`
	TemplateHash string    `json:"template_hash"`
	// MaxConnections is the most connections the lease may have open.
	MaxConnections int32 `json:"max_connections"`
	// EndedReason says why the lease ended, once it has.
	EndedReason string `json:"ended_reason"`
	// KeepAutoIncrement: the lease's resets leave AUTO_INCREMENT where its
	// tests moved it (AcquireLeaseRequest.KeepAutoIncrement).
	KeepAutoIncrement bool `json:"keep_auto_increment"`
	// CACert is the PEM certificate of the authority that signed the
	// server's TLS certificate, which covers Host; see TLSConfig and
	// TLSDSN. DSN and URL connect without TLS. Empty when the server
	// offers no certificate clients can verify.
	CACert string `json:"ca_cert"`
}

// ResetReport says what a reset did and how long each phase took.
type ResetReport struct {
	LeaseID           string   `json:"lease_id"`
	Strategy          Strategy `json:"strategy"`           // what ran
	RequestedStrategy Strategy `json:"requested_strategy"` // what was asked for
	// FallbackReason says why more than the requested work was done, e.g.
	// writes committed under the rollback strategy, or DDL run by the test.
	FallbackReason string      `json:"fallback_reason"`
	TotalMs        float64     `json:"total_ms"`
	Phases         ResetPhases `json:"phases"`
	TablesTotal    int32       `json:"tables_total"`   // tables checked
	TablesReset    []string    `json:"tables_reset"`   // tables restored
	SchemaChanges  []string    `json:"schema_changes"` // schema objects put back
	SessionsEnded  int32       `json:"sessions_ended"` // open sessions of the lease that were ended
	Database       string      `json:"database"`
	// KeepAutoIncrement: this reset left AUTO_INCREMENT where the tests
	// moved it; otherwise the counters are the template's.
	KeepAutoIncrement bool `json:"keep_auto_increment"`
	// TablesDelta are the tables of TablesReset restored row by row: only
	// the rows the test changed were put back; the others were copied
	// back whole.
	TablesDelta []string `json:"tables_delta"`
	// DeltaFallback says why tables were copied back whole rather than
	// row by row (no primary key, a FULLTEXT index, a TRUNCATE or ALTER,
	// too many rows changed…), with the tables it holds for.
	DeltaFallback string `json:"delta_fallback"`
	// XARolledBack are the XA transactions a test left prepared in the
	// database (XA PREPARE without XA COMMIT or XA ROLLBACK) that the reset
	// rolled back, by xid.
	XARolledBack []string `json:"xa_rolled_back"`
}

// ResetPhases are the phases of a reset, in milliseconds.
type ResetPhases struct {
	SessionsMs float64 `json:"sessions_ms"`
	DetectMs   float64 `json:"detect_ms"`
	VerifyMs   float64 `json:"verify_ms"`
	RestoreMs  float64 `json:"restore_ms"`
	SchemaMs   float64 `json:"schema_ms"`
}

// Instance is one MySQL-compatible server run by the daemon.
type Instance struct {
	ID                 string    `json:"id"`
	Provider           string    `json:"provider"` // "native" or "docker"
	Engine             string    `json:"engine"`   // "mysql" or "mariadb"
	Version            string    `json:"version"`
	Host               string    `json:"host"`
	Port               int32     `json:"port"`
	Datadir            string    `json:"datadir"`
	DatadirOnTmpfs     bool      `json:"datadir_on_tmpfs"`
	MemoryBytes        int64     `json:"memory_bytes"`
	Databases          int32     `json:"databases"`
	State              string    `json:"state"`
	StartupMs          float64   `json:"startup_ms"`
	Settings           []Setting `json:"settings"`
	Socket             string    `json:"socket"`
	Pid                int32     `json:"pid"`
	Image              string    `json:"image"`
	ContainerID        string    `json:"container_id"`
	DatadirBytes       int64     `json:"datadir_bytes"`
	Error              string    `json:"error"`
	StartedAt          time.Time `json:"started_at"`
	SettingsMismatched []string  `json:"settings_mismatched"`
	DatadirSizeBytes   int64     `json:"datadir_size_bytes"` // the datadir's filesystem size; 0 when not visible
}

// Setting is a server setting the daemon asked for and the value the
// server runs with.
type Setting struct {
	Name      string `json:"name"`
	Requested string `json:"requested"`
	Actual    string `json:"actual"`
	OK        bool   `json:"ok"`
}

// Stats are the daemon's counters and latency percentiles.
type Stats struct {
	Resets           []StrategyStats `json:"resets"` // reset latency by the strategy that ran
	Acquire          LatencyStats    `json:"acquire"`
	AcquireWait      LatencyStats    `json:"acquire_wait"`
	LeasesActive     int64           `json:"leases_active"`
	LeasesAcquired   int64           `json:"leases_acquired"`
	LeasesExpired    int64           `json:"leases_expired"`
	AcquireExhausted int64           `json:"acquire_exhausted"`
	Instances        int32           `json:"instances"`
	Databases        int32           `json:"databases"`
	Templates        int32           `json:"templates"`
}

// StrategyStats are the resets one strategy ran.
type StrategyStats struct {
	Strategy  Strategy     `json:"strategy"`
	Latency   LatencyStats `json:"latency"`
	Fallbacks int64        `json:"fallbacks"`
	Failures  int64        `json:"failures"`
}

// LatencyStats summarise recent samples, in milliseconds.
type LatencyStats struct {
	Count  int64   `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// flexInt reads a whole number written as a JSON number (1, 1.0, 1e3) or,
// as daemons before 64-bit counts became numbers wrote it, a string ("1").
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = flexInt(v)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<63-1 {
		return fmt.Errorf("want a whole number, got %s", b)
	}
	*n = flexInt(f)
	return nil
}

// UnmarshalJSON reads Resets as a number or a string.
func (l *Lease) UnmarshalJSON(b []byte) error {
	type plain Lease
	v := struct {
		*plain
		Resets flexInt `json:"resets"`
	}{plain: (*plain)(l)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	l.Resets = int64(v.Resets)
	return nil
}

// UnmarshalJSON reads the byte sizes as numbers or strings.
func (in *Instance) UnmarshalJSON(b []byte) error {
	type plain Instance
	v := struct {
		*plain
		MemoryBytes      flexInt `json:"memory_bytes"`
		DatadirBytes     flexInt `json:"datadir_bytes"`
		DatadirSizeBytes flexInt `json:"datadir_size_bytes"`
	}{plain: (*plain)(in)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	in.MemoryBytes, in.DatadirBytes, in.DatadirSizeBytes = int64(v.MemoryBytes), int64(v.DatadirBytes), int64(v.DatadirSizeBytes)
	return nil
}

// UnmarshalJSON reads the counts as numbers or strings.
func (s *Stats) UnmarshalJSON(b []byte) error {
	type plain Stats
	v := struct {
		*plain
		LeasesActive     flexInt `json:"leases_active"`
		LeasesAcquired   flexInt `json:"leases_acquired"`
		LeasesExpired    flexInt `json:"leases_expired"`
		AcquireExhausted flexInt `json:"acquire_exhausted"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.LeasesActive, s.LeasesAcquired = int64(v.LeasesActive), int64(v.LeasesAcquired)
	s.LeasesExpired, s.AcquireExhausted = int64(v.LeasesExpired), int64(v.AcquireExhausted)
	return nil
}

// UnmarshalJSON reads the counts as numbers or strings.
func (s *StrategyStats) UnmarshalJSON(b []byte) error {
	type plain StrategyStats
	v := struct {
		*plain
		Fallbacks flexInt `json:"fallbacks"`
		Failures  flexInt `json:"failures"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Fallbacks, s.Failures = int64(v.Fallbacks), int64(v.Failures)
	return nil
}

// UnmarshalJSON reads the count as a number or a string.
func (l *LatencyStats) UnmarshalJSON(b []byte) error {
	type plain LatencyStats
	v := struct {
		*plain
		Count flexInt `json:"count"`
	}{plain: (*plain)(l)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	l.Count = int64(v.Count)
	return nil
}
