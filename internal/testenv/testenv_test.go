package testenv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/testenv"
)

func TestDockerServer(t *testing.T) {
	for _, p := range testenv.Kind("docker") {
		t.Run(p.Name, func(t *testing.T) {
			s := testenv.ServerOf(t, p)
			info := s.Info(context.Background())
			if info.Provider != "docker" || !info.DatadirOnTmpfs || info.Image != p.Image {
				t.Errorf("info: %+v", info)
			}
			if bad := testdbd.Mismatched(info.Settings); len(bad) > 0 || len(info.Settings) == 0 {
				t.Errorf("settings: %d read back, not taken: %v", len(info.Settings), bad)
			}
			if err := s.DB.Ping(); err != nil {
				t.Errorf("admin pool: %v", err)
			}
		})
	}
}

func names(ps []testenv.Provider) string {
	var n []string
	for _, p := range ps {
		n = append(n, p.Name)
	}
	return strings.Join(n, ",")
}

func TestSelection(t *testing.T) {
	t.Setenv("TESTDBD_TEST_IMAGE", "")
	t.Setenv("TESTDBD_ENGINES", "")
	all := testenv.Providers()
	if len(all) != 5 || all[0].Kind != "native" || all[4].Kind != "kubernetes" {
		t.Fatalf("all cells: %s", names(all))
	}
	for _, want := range []string{"docker-mariadb-10.11", "docker-mariadb-11.8", "docker-mysql-9.7", "kubernetes-mariadb-10.11"} {
		if !strings.Contains(names(all), want) {
			t.Errorf("no cell %s in %s", want, names(all))
		}
	}
	nat := all[0]
	cases := map[string]string{
		"mysql-9.7":                      "docker-mysql-9.7",
		"mysql-9.7, " + nat.ID:           nat.Name + ",docker-mysql-9.7", // the native cell comes first
		"docker":                         "docker-mariadb-10.11,docker-mariadb-11.8,docker-mysql-9.7",
		"native,docker-mariadb-11.8":     nat.Name + ",docker-mariadb-11.8",
		"mariadb-11.8,mariadb-11.8":      "docker-mariadb-11.8",
		"docker-mysql-9.7,mariadb-10.11": "docker-mariadb-10.11,docker-mysql-9.7",
		"kubernetes,native":              nat.Name + ",kubernetes-mariadb-10.11",
	}
	for sel, want := range cases {
		t.Setenv("TESTDBD_ENGINES", sel)
		if got := names(testenv.Providers()); got != want {
			t.Errorf("TESTDBD_ENGINES=%s: %s, want %s", sel, got, want)
		}
	}
	t.Setenv("TESTDBD_ENGINES", "oracle-23")
	got := testenv.Providers()
	if len(got) != 1 || got[0].Name != "unknown-oracle-23" {
		t.Errorf("unknown cell: %s", names(got))
	}
	t.Setenv("TESTDBD_ENGINES", "")
	t.Setenv("TESTDBD_TEST_IMAGE", "mysql:8.4")
	if got := names(testenv.Kind("docker")); got != "docker-mysql-8.4" {
		t.Errorf("TESTDBD_TEST_IMAGE: %s", got)
	}
}

// TestEngineCells: the randomized proofs leave the Kubernetes cell out
// unless TESTDBD_ENGINES names it.
func TestEngineCells(t *testing.T) {
	t.Setenv("TESTDBD_TEST_IMAGE", "")
	nat := testenv.Providers()[0]
	cases := map[string]string{
		"":                                    nat.Name + ",docker-mariadb-10.11,docker-mariadb-11.8,docker-mysql-9.7",
		"docker":                              "docker-mariadb-10.11,docker-mariadb-11.8,docker-mysql-9.7",
		"kubernetes":                          "kubernetes-mariadb-10.11",
		"mysql-9.7, kubernetes-mariadb-10.11": "docker-mysql-9.7,kubernetes-mariadb-10.11",
	}
	for sel, want := range cases {
		t.Setenv("TESTDBD_ENGINES", sel)
		if got := names(testenv.EngineCells()); got != want {
			t.Errorf("TESTDBD_ENGINES=%q: %s, want %s", sel, got, want)
		}
	}
}
