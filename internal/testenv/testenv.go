package testenv

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/native"
)

// timeout bounds starting and stopping servers in tests.
const timeout = 2 * time.Minute

var (
	pristineOnce sync.Once
	pristineDir  string
)

// PristineDir is a cache of initialized datadirs shared by the tests of one
// package, so each test does not pay for mariadb-install-db.
func PristineDir(tb testing.TB) string {
	pristineOnce.Do(func() {
		dir, err := tempDir(kindPristine)
		if err != nil {
			tb.Fatal(err)
		}
		pristineDir = dir
	})
	return pristineDir
}

// StateDir returns a fresh, short state directory (Unix socket paths must
// stay under 108 bytes), removed at the end of the test.
func StateDir(tb testing.TB) string {
	tb.Helper()
	dir, err := tempDir(kindState)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Logger returns a logger that writes to the test log when -v is set.
func Logger(tb testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}

// NativeConfig returns a provider configuration for a test: its own state
// directory, the shared pristine cache.
func NativeConfig(tb testing.TB) native.Config {
	return native.Config{StateDir: StateDir(tb), PristineDir: PristineDir(tb), Logger: Logger(tb)}
}

// Native starts a native provider and closes it at the end of the test.
func Native(tb testing.TB) *native.Provider {
	tb.Helper()
	return NativeWith(tb, NativeConfig(tb))
}

// NativeWith starts a native provider with cfg and closes it at the end of
// the test.
func NativeWith(tb testing.TB, cfg native.Config) *native.Provider {
	tb.Helper()
	if _, err := native.FindBinary(cfg.Binary); err != nil {
		if os.Getenv("TESTDBD_REQUIRE_NATIVE") != "" {
			// make test installs the server first: a run without it would
			// pass having tested nothing on a real server.
			tb.Fatalf("%v: scripts/install-deps.sh server installs it (TESTDBD_REQUIRE_NATIVE is set)", err)
		}
		tb.Skipf("%v: scripts/install-deps.sh server installs it (make test does)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := native.New(ctx, cfg)
	if err != nil {
		tb.Fatalf("native provider: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("close provider: %v", err)
		}
	})
	return p
}

// Fleet returns a fleet of up to max native servers, stopped at the end of
// the test.
func Fleet(tb testing.TB, max int) *instance.Fleet {
	tb.Helper()
	f := instance.NewFleet(Native(tb), instance.FleetConfig{MaxInstances: max, Logger: Logger(tb)})
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = f.Close(ctx)
	})
	return f
}

// Server starts one native server and returns it with its admin pool.
func Server(tb testing.TB) *instance.Member {
	tb.Helper()
	f := Fleet(tb, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := f.Start(ctx)
	if err != nil {
		tb.Fatalf("start server: %v", err)
	}
	return s
}

// RemovePristine removes the shared pristine cache; call it from TestMain
// after the tests ran.
func RemovePristine() {
	if pristineDir != "" {
		os.RemoveAll(filepath.Clean(pristineDir))
	}
}

// Main is a package's TestMain when it needs nothing else: it runs the
// tests, removes the package's pristine datadir cache and exits.
func Main(m *testing.M) {
	code := m.Run()
	RemovePristine()
	os.Exit(code)
}

// RowStream follows srv's binary log for delta restores (see binlog.Rows)
// for the test's duration, and returns once the stream runs.
func RowStream(tb testing.TB, srv *instance.Member) *binlog.Rows {
	tb.Helper()
	r := srv.FollowRows(Logger(tb))
	tb.Cleanup(r.Close)
	const probe = "testdbd_rows_probe"
	r.Track(probe, nil)
	defer r.Untrack(probe)
	for deadline := time.Now().Add(30 * time.Second); ; {
		c := r.Take(context.Background(), probe, time.Second)
		if c.Why == "" {
			return r
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the binary log stream did not start: %s", c.Why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
