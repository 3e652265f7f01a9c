package dockertest_test

import (
	"context"
	"testing"

	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/docker/dockertest"
	"github.com/testdbd/testdbd/internal/testenv"
)

func TestServer(t *testing.T) {
	s := testenv.ServerOf(t, testenv.Providers()[1])
	info := s.Info(context.Background())
	if info.Provider != "docker" || !info.DatadirOnTmpfs || info.Image != dockertest.Image() {
		t.Errorf("info: %+v", info)
	}
	if bad := instance.Mismatched(info.Settings); len(bad) > 0 || len(info.Settings) == 0 {
		t.Errorf("settings: %d read back, not taken: %v", len(info.Settings), bad)
	}
	if err := s.DB.Ping(); err != nil {
		t.Errorf("admin pool: %v", err)
	}
}
