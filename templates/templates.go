package templates

import (
	"regexp"
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
	Engine        string // "mariadb", "mysql" or "" for any
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
	Total     time.Duration
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
	if req.Engine != "" && req.Engine != string(engine.Flavor) {
		return Spec{}, testdbd.Errorf(testdbd.EInvalid,
			"engine %q was asked for, but this daemon runs %s servers: leave engine empty or start a daemon with a %s server", req.Engine, engine, req.Engine)
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

// Short is the first 12 characters of a hash, as database names carry it.
func Short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
