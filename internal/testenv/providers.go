package testenv

import (
	"context"
	"os/exec"
	"syscall"
	"testing"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
)

// Provider is one way of running servers that integration tests are
// table-driven over.
type Provider struct {
	Name string
	// New starts the provider for a test and closes it at the end; the
	// docker provider skips the test, saying why, when no engine is
	// reachable.
	New func(tb testing.TB) testdbd.Provider
	// Kill makes a running server die the way kill -9 would.
	Kill func(tb testing.TB, s *instance.Member)
}

// Providers returns the native and the docker provider.
func Providers() []Provider {
	return []Provider{
		{
			Name: "native",
			New:  func(tb testing.TB) testdbd.Provider { return Native(tb) },
			Kill: func(tb testing.TB, s *instance.Member) {
				if err := syscall.Kill(s.Info(context.Background()).PID, syscall.SIGKILL); err != nil {
					tb.Fatalf("kill -9: %v", err)
				}
			},
		},
		{
			Name: "docker",
			New:  func(tb testing.TB) testdbd.Provider { return Docker(tb) },
			Kill: func(tb testing.TB, s *instance.Member) {
				id := s.Info(context.Background()).ContainerID
				if out, err := exec.Command("docker", "kill", id).CombinedOutput(); err != nil {
					tb.Fatalf("docker kill %s: %v: %s", id, err, out)
				}
			},
		},
	}
}

// ServerOf starts one server of provider p, stopped at the end of the test.
func ServerOf(tb testing.TB, p Provider) *instance.Member {
	tb.Helper()
	f := instance.NewFleet(p.New(tb), instance.FleetConfig{MaxInstances: 1, Logger: Logger(tb)})
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_ = f.Close(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := f.Start(ctx)
	if err != nil {
		tb.Fatalf("start %s server: %v", p.Name, err)
	}
	return s
}
