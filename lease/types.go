package lease

import (
	"time"

	"github.com/testdbd/testdbd"
)

// AcquireRequest asks for a lease.
type AcquireRequest struct {
	Template string
	// TemplateHash pins the lease to the build of Template with this hash;
	// empty means the name's current build.
	TemplateHash string
	Strategy     testdbd.Strategy
	TTL          time.Duration // 0 means the default
	Worker       string        // sticky key
	WaitTimeout  time.Duration // 0 means the default
	// MaxConnections caps the lease's connections; 0 means the default
	// (Config.LeaseConnections).
	MaxConnections int
	// KeepAutoIncrement: the lease's resets leave AUTO_INCREMENT where its
	// tests moved it (the reset after the lease ends rewinds it).
	KeepAutoIncrement bool
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
	// MaxConnections is the most connections the lease's account may have
	// open at once.
	MaxConnections int
	// EndedReason says why the lease ended, once it has.
	EndedReason string
	// KeepAutoIncrement: see AcquireRequest.
	KeepAutoIncrement bool
	// CACert is the PEM certificate of the authority that signed the
	// server's TLS certificate; "" when the server offers none clients can
	// verify.
	CACert string
}
