package testdbd

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Version is testdbd's version. It is part of every template hash, so a new
// release never reuses a template built by an older one. Set at build time
// with -ldflags "-X github.com/testdbd/testdbd.Version=...".
var Version = "0.1.0-dev"

// Flavor is a MySQL-compatible engine family.
type Flavor string

// The supported flavors.
const (
	MariaDB Flavor = "mariadb"
	MySQL   Flavor = "mysql"
)

// Engine identifies a server binary: its flavor and version.
type Engine struct {
	Flavor  Flavor
	Version string // e.g. "10.11.19"
}

func (e Engine) String() string { return string(e.Flavor) + " " + e.Version }

// ParseEngine detects the flavor and version from a server's version string,
// as printed by `mysqld --version` or returned by SELECT VERSION().
func ParseEngine(s string) (Engine, error) {
	flavor := MySQL
	if strings.Contains(strings.ToLower(s), "mariadb") {
		flavor = MariaDB
	}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '-' }) {
		if len(f) > 0 && f[0] >= '0' && f[0] <= '9' && strings.Count(f, ".") >= 2 {
			return Engine{Flavor: flavor, Version: f}, nil
		}
	}
	return Engine{}, fmt.Errorf("no version number in %q", s)
}

// Endpoint says how to reach a server.
type Endpoint struct {
	Host     string // TCP host; empty when Socket is set
	Port     int
	Socket   string // Unix socket path, preferred when set
	User     string
	Password string
}

// InstanceState is where an instance is in its life.
type InstanceState string

// The instance states.
const (
	InstanceStarting InstanceState = "starting"
	InstanceRunning  InstanceState = "running"
	InstanceFailed   InstanceState = "failed"
	InstanceStopped  InstanceState = "stopped"
)

// Setting is a server setting testdbd asked for and what the server runs with.
type Setting struct {
	Name      string // the server variable, e.g. "innodb_stats_auto_recalc"
	Requested string // the value asked for
	Actual    string // the value read back from the running server
	OK        bool   // whether Actual means the same as Requested
}

// Mismatched describes the settings that did not take, e.g.
// "max_connections (asked 512, runs with 214)".
func Mismatched(s []Setting) []string {
	var bad []string
	for _, x := range s {
		if !x.OK {
			bad = append(bad, fmt.Sprintf("%s (asked %s, runs with %s)", x.Name, x.Requested, x.Actual))
		}
	}
	return bad
}

// InstanceInfo describes a running (or failed) server instance.
type InstanceInfo struct {
	ID             string
	Provider       string // "native" or "docker"
	Engine         Engine
	Host           string // address handed to clients
	Port           int
	Socket         string // Unix socket (native only)
	Datadir        string
	DatadirOnTmpfs bool
	DatadirBytes   int64 // bytes used on the datadir's filesystem
	MemoryBytes    int64 // resident memory of the server process or container
	// FootprintBytes is the memory the instance takes from the machine:
	// resident memory plus its tmpfs data. The memory budget counts it.
	FootprintBytes int64
	PID            int
	Image          string // docker only
	ContainerID    string // docker only
	State          InstanceState
	Err            string // why the instance failed
	StartedAt      time.Time
	StartupTime    time.Duration
	// Settings are the settings asked for and read back from the running
	// server (filled in by instance.Server.Info, not by providers).
	Settings []Setting
}

// Instance is one running MySQL-compatible server. Implementations are safe
// for concurrent use.
type Instance interface {
	// ID is unique among the instances of one daemon.
	ID() string
	// Info returns the instance's description, with memory and disk usage
	// read now.
	Info(ctx context.Context) InstanceInfo
	// Admin is the endpoint of the daemon's own administrative connections.
	Admin() Endpoint
	// Engine is the server's flavor and version.
	Engine() Engine
	// ClientAddr is the TCP address handed to leases.
	ClientAddr() (host string, port int)
	// TLSCA is the PEM certificate of the authority that signed the
	// server's TLS certificate, which covers ClientAddr's host; nil when
	// the server offers no TLS.
	TLSCA() []byte
	// Done is closed when the server process has exited, for whatever reason.
	Done() <-chan struct{}
	// Err says why the server exited, once Done is closed.
	Err() error
	// Stop stops the server and removes its datadir and mounts.
	Stop(ctx context.Context) error
}

// LocalDatadir is implemented by instances whose datadir the daemon can
// see on its own filesystem: native processes, and containers when the
// daemon runs as root beside the container engine. Detection then watches
// each database's directory for schema changes (see strategies).
type LocalDatadir interface {
	// LocalDatadir returns the datadir's path as the daemon sees it, or ""
	// when it cannot see it.
	LocalDatadir() string
}

// TLSRenewer is implemented by instances whose TLS certificate can be
// replaced while they run: native processes and containers. The fleet
// renews a certificate near its end and has the server load it (FLUSH SSL,
// ALTER INSTANCE RELOAD TLS).
type TLSRenewer interface {
	// TLSNotAfter is when the server's certificate expires; zero when it
	// has none of testdbd's.
	TLSNotAfter() time.Time
	// RenewTLS issues a new certificate and key and puts them where the
	// server reads them; the server uses them once told to reload.
	RenewTLS(ctx context.Context) error
}

// StartOptions are what a provider needs to start one server.
type StartOptions struct {
	// Args are the server settings as command-line options (--name=value).
	Args []string
	// MaxConnections is passed as max_connections.
	MaxConnections int
	// Port, when not 0, is the TCP port the server listens on for clients;
	// 0 lets the provider pick a free one. A caller that gives ports (from
	// a range a container publishes) starts again with another when the
	// error says the address is in use.
	Port int
	// BindAddress is the address the server listens on for clients; empty
	// means 127.0.0.1. "0.0.0.0" listens on every interface (in a container,
	// so that a published port reaches the server).
	BindAddress string
	// TLSHosts are names or addresses the server's TLS certificate covers
	// besides the loopback ones and the provider's own client address
	// (the host leases carry when it is another, --advertise-host).
	TLSHosts []string
}

// Provider starts server instances. Implementations are safe for concurrent use.
type Provider interface {
	// Name is "native" or "docker".
	Name() string
	// Engine is the flavor and version of the servers this provider starts.
	Engine() Engine
	// Start starts one server and waits until it answers.
	Start(ctx context.Context, opts StartOptions) (Instance, error)
	// Close stops every server the provider started and removes what they
	// left (datadirs, mounts, containers).
	Close(ctx context.Context) error
}

// Strategy is how a leased database is brought back to its template.
type Strategy int

// The reset strategies. StrategyUnspecified is a request that names none:
// a lease then gets the daemon's default strategy, a reset its lease's.
const (
	StrategyUnspecified Strategy = iota
	StrategyTruncate
	StrategySnapshot
	StrategyRollback
)

// Strategies lists the strategies that run.
var Strategies = []Strategy{StrategyTruncate, StrategySnapshot, StrategyRollback}

func (s Strategy) String() string {
	switch s {
	case StrategyTruncate:
		return "truncate"
	case StrategySnapshot:
		return "snapshot"
	case StrategyRollback:
		return "rollback"
	default:
		return "unspecified"
	}
}

// ParseStrategy parses a strategy name: truncate, snapshot or rollback.
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range Strategies {
		if s == st.String() {
			return st, nil
		}
	}
	return StrategyUnspecified, Errorf(EInvalid, "unknown strategy %q: use truncate, snapshot or rollback", s)
}

// ResetPhases are the timed phases of a reset.
type ResetPhases struct {
	Sessions time.Duration // ending the lease's open sessions
	Detect   time.Duration // finding the changed tables
	Verify   time.Duration // comparing content with the template
	Restore  time.Duration // putting tables back
	Schema   time.Duration // recreating changed schema objects
}

// ResetReport says what a reset did and how long it took.
type ResetReport struct {
	LeaseID        string
	Database       string
	Strategy       Strategy // what ran
	Requested      Strategy // what was asked for
	FallbackReason string   // why more than the requested work was done
	Total          time.Duration
	Phases         ResetPhases
	TablesTotal    int      // tables checked
	TablesReset    []string // tables restored
	// TablesDelta are the tables of TablesReset restored row by row (the
	// delta restore): the rows the binary log shows the test changed, or
	// the rows it added to a big table it only appended to; the others
	// were copied back whole from the template.
	TablesDelta []string
	// DeltaFallback says why tables of TablesReset were copied back whole
	// although the binary log was followed for the rows tests change: the
	// first reason, with the tables it holds for ("" when none were).
	DeltaFallback string
	SchemaChanges []string // schema objects put back
	SessionsEnded int
	// XARolledBack are the XA transactions left prepared in the database
	// that the reset rolled back, by xid.
	XARolledBack []string
	// KeepAutoIncrement: the reset left AUTO_INCREMENT where the tests
	// moved it (a lease's choice); otherwise it is the template's.
	KeepAutoIncrement bool
}
