package templates

import (
	"regexp"
	"strings"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/migrations"
)

// State is where a template is in its life.
type State string

// The template states.
const (
	Building State = "building"
	Ready    State = "ready"
	Failed   State = "failed"
	// Degraded is a ready template that cannot make databases now (its
	// error says why); testdbd retries with a backoff.
	Degraded State = "degraded"
)

// Request asks for a template.
type Request struct {
	Name          string
	MigrationsDir string            // a directory on the daemon's host, or
	Files         []migrations.File // uploaded migration files
	Seed          string
	Engine        string // "mariadb", "mysql", "mysql-9.7" … or "" for the daemon's default (see EngineMatches)
	Async         bool   // return while still building
	PoolSize      int    // ready databases to keep; 0 means the default
	// BuildTimeout bounds the build; 0 means the daemon's default.
	BuildTimeout time.Duration
}

// Timings are a template build's phases.
type Timings struct {
	Provision time.Duration // waiting for a server
	Migrate   time.Duration
	Seed      time.Duration
	Capture   time.Duration
	Clone     time.Duration // the first worker database
	Restore   time.Duration // from the template cache, in place of the rest
	Total     time.Duration
}

// Build phases, as Progress.Phase names them.
const (
	PhaseWaiting   = "waiting"   // for a server or a build slot
	PhaseMigrating = "migrating" // the daemon runs the goose migrations
	PhaseSeeding   = "seeding"
	PhaseExternal  = "external" // the caller's own migrator runs
	PhaseRestoring = "restoring"
	PhaseCapturing = "capturing"
	PhaseCloning   = "cloning"
	PhaseDone      = "done"
	PhaseFailed    = "failed"
)

// Sources: how a template came to be.
const (
	SourceMigrations = "migrations" // goose files, run by the daemon
	SourceExternal   = "external"   // the caller's migrator (an external build)
	SourceCache      = "cache"      // restored from the template cache
)

// Progress is where a build is.
type Progress struct {
	Phase       string
	Step, Steps int    // the migration running (1-based) of how many, while migrating
	Migration   string // its file name
	Elapsed     time.Duration
}

// PoolCounts are a template's worker databases by state.
type PoolCounts struct {
	Ready, Leased, Resetting, Creating, Target int
}

// Info describes a template.
type Info struct {
	Name       string
	Hash       string
	State      State
	Err        string
	InstanceID string
	Database   string
	Engine     string
	Tables     int
	Views      int
	Triggers   int
	Routines   int
	Events     int
	Version    int64
	Migrations []string
	Build      Timings
	Pool       PoolCounts
	CreatedAt  time.Time
	// Current: the name resolves to this build (the most recently ensured
	// ready one); other live builds of the name are leased by hash.
	Current  bool
	Progress Progress
	Source   string // SourceMigrations, SourceExternal or SourceCache
}

// Spec is a validated request: what to build and its hash.
type Spec struct {
	Name   string
	Source migrations.Source
	Hash   string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName validates a template name: 1–64 letters, digits, '.', '_' or
// '-', starting with a letter or digit. Names never reach SQL: databases are
// named by hash.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		shown := name
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		return testdbd.Errorf(testdbd.EInvalid,
			"template name %q is not valid: use 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", shown)
	}
	return nil
}

// Prepare validates req for servers of engine: the name, the engine asked
// for, the migrations (read from req.MigrationsDir, which must lie within
// root, or checked as uploaded) and the seed, and computes the template's
// hash. Errors are EInvalid.
func Prepare(req Request, engine testdbd.Engine, root string) (Spec, error) {
	if err := CheckName(req.Name); err != nil {
		return Spec{}, err
	}
	if err := checkEngine(req.Engine, engine); err != nil {
		return Spec{}, err
	}
	if (req.MigrationsDir == "") == (len(req.Files) == 0) {
		return Spec{}, testdbd.Errorf(testdbd.EInvalid, "give either migrations_dir (a directory on the daemon's host) or migrations (uploaded files), not both or neither")
	}
	var files []migrations.File
	var err error
	if req.MigrationsDir != "" {
		files, err = migrations.LoadDir(req.MigrationsDir, root)
	} else {
		files, err = migrations.CheckUpload(req.Files)
	}
	if err != nil {
		return Spec{}, err
	}
	if err := migrations.CheckSeed(req.Seed); err != nil {
		return Spec{}, err
	}
	src := migrations.Source{Files: files, Seed: req.Seed}
	return Spec{Name: req.Name, Source: src, Hash: migrations.Hash(src, engine)}, nil
}

// ExternalRequest asks for a template built by the caller's own migrator.
type ExternalRequest struct {
	Name        string
	ContentHash string // the caller's name for the content
	Engine      string // "mariadb", "mysql" or "" for any
	PoolSize    int
	TTL         time.Duration // until FinishTemplateBuild; 0 means the daemon's build timeout
}

var contentHashRE = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)

// PrepareExternal validates req for servers of engine and returns the
// template's hash.
func PrepareExternal(req ExternalRequest, engine testdbd.Engine) (string, error) {
	if err := CheckName(req.Name); err != nil {
		return "", err
	}
	if err := checkEngine(req.Engine, engine); err != nil {
		return "", err
	}
	if !contentHashRE.MatchString(req.ContentHash) {
		return "", testdbd.Errorf(testdbd.EInvalid,
			"content_hash must be 1 to 128 printable ASCII characters without spaces (e.g. a SHA-256 of your migration files, as testdbd template ensure --hash-files computes)")
	}
	return migrations.ExternalHash(req.ContentHash, engine), nil
}

// checkEngine refuses a request for another engine than the servers'.
func checkEngine(asked string, engine testdbd.Engine) error {
	if asked != "" && !EngineMatches(asked, engine) {
		return testdbd.Errorf(testdbd.EInvalid,
			"engine %q was asked for, but the template is built on %s: leave engine empty or name %s", asked, engine, EngineName(engine))
	}
	return nil
}

// EngineMatches reports whether a request's engine names e: its flavor
// ("mysql"), or its flavor and version or version prefix ("mysql-9.7",
// "mariadb 11.8", "mariadb-10.11.19").
func EngineMatches(asked string, e testdbd.Engine) bool {
	asked = strings.ToLower(strings.TrimSpace(asked))
	flavor, version, found := strings.Cut(strings.Replace(asked, " ", "-", 1), "-")
	if flavor != string(e.Flavor) {
		return false
	}
	if !found {
		return true
	}
	return version == e.Version || strings.HasPrefix(e.Version, version+".")
}

// EngineName is how requests name e: flavor-major.minor.
func EngineName(e testdbd.Engine) string {
	parts := strings.SplitN(e.Version, ".", 3)
	if len(parts) >= 2 {
		return string(e.Flavor) + "-" + parts[0] + "." + parts[1]
	}
	return string(e.Flavor) + "-" + e.Version
}

// Short is the first 12 characters of a hash, as database names carry it.
func Short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
