package testenv_test

import (
	"context"
	"testing"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
)

func TestDockerServer(t *testing.T) {
	s := testenv.ServerOf(t, testenv.Providers()[1])
	info := s.Info(context.Background())
	if info.Provider != "docker" || !info.DatadirOnTmpfs || info.Image != testenv.DockerImage() {
		t.Errorf("info: %+v", info)
	}
	if bad := testdbd.Mismatched(info.Settings); len(bad) > 0 || len(info.Settings) == 0 {
		t.Errorf("settings: %d read back, not taken: %v", len(info.Settings), bad)
	}
	if err := s.DB.Ping(); err != nil {
		t.Errorf("admin pool: %v", err)
	}
}
