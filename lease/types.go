package lease

import (
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/migrations"
)

// TemplateState is where a template is in its life.
type TemplateState string

// The template states.
const (
	TemplateBuilding TemplateState = "building"
	TemplateReady    TemplateState = "ready"
	TemplateFailed   TemplateState = "failed"
)

// TemplateRequest asks for a template.
type TemplateRequest struct {
	Name          string
	MigrationsDir string            // a directory on the daemon's host, or
	Files         []migrations.File // uploaded migration files
	Seed          string
	Engine        string // "mariadb", "mysql" or "" for any
	Async         bool   // return while still building
	PoolSize      int    // ready databases to keep; 0 means the default
}

// BuildTimings are a template build's phases.
type BuildTimings struct {
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

// TemplateInfo describes a template.
type TemplateInfo struct {
	Name       string
	Hash       string
	State      TemplateState
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
	Build      BuildTimings
	Pool       PoolCounts
	CreatedAt  time.Time
}

// AcquireRequest asks for a lease.
type AcquireRequest struct {
	Template    string
	Strategy    testdbd.Strategy
	TTL         time.Duration // 0 means the default
	Worker      string        // sticky key
	WaitTimeout time.Duration // 0 means the default
}

// Lease states.
const (
	LeaseActive   = "active"
	LeaseReleased = "released"
	LeaseExpired  = "expired"
	LeaseFailed   = "failed"
)

// LeaseInfo describes a lease.
type LeaseInfo struct {
	ID           string
	Template     string
	TemplateHash string
	Strategy     testdbd.Strategy
	Worker       string
	Database     string
	Host         string
	Port         int
	User         string
	Password     string
	DSN          string // go-sql-driver/mysql form
	URL          string // mysql://
	InstanceID   string
	State        string
	AcquiredAt   time.Time
	ExpiresAt    time.Time
	TTL          time.Duration
	Waited       time.Duration
	Resets       int64
}
