package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/native"
)

// Provider is one cell of the engine matrix integration tests are
// table-driven over: a provider and the engine it runs.
type Provider struct {
	// Name is the subtest name: "native-mariadb-10.11", "docker-mysql-9.7".
	// `go test -run '/docker'` selects every Docker cell.
	Name string
	// ID is what TESTDBD_ENGINES selects the cell by: "mariadb-10.11-native",
	// "mariadb-10.11", "mariadb-11.8", "mysql-9.7".
	ID string
	// Kind is "native", "docker" or "kubernetes".
	Kind string
	// Image is the Docker cell's image.
	Image string
	// New starts the provider for a test and closes it at the end; a cell
	// skips the test, saying why and what provides it, when its server
	// binary, Docker engine, image or cluster is missing, and the Docker and
	// Kubernetes cells skip in the quick tier (go test -short).
	New func(tb testing.TB) testdbd.Provider
	// Kill makes a running server die the way kill -9 would.
	Kill func(tb testing.TB, s *instance.Member)
}

// DockerImages are the local images of the Docker cells, by cell id, and
// the make target that builds each.
var DockerImages = []struct{ ID, Image, Make string }{
	{"mariadb-10.11", "testdbd/mariadb:10.11-local", "make image"},
	{"mariadb-11.8", "testdbd/mariadb:11.8-local", "make image-mariadb-11.8"},
	{"mysql-9.7", "testdbd/mysql:9.7-local", "make image-mysql-9.7"},
}

// Providers returns the cells of the engine matrix that TESTDBD_ENGINES
// selects, the native one first: native MariaDB (the host's server binary,
// MariaDB 10.11 on Debian 12) and Docker MariaDB 10.11, MariaDB 11.8 and
// MySQL 9.7 (the images `make images` builds), then Kubernetes MariaDB
// 10.11 (the local cluster, `make k8s-up`; its tests skip when no cluster
// answers). TESTDBD_ENGINES is a comma-separated list of cell ids or
// names, or "native", "docker" or "kubernetes" for every cell of that kind (e.g. TESTDBD_ENGINES=mariadb-10.11-native,mysql-9.7);
// unset or empty means every cell. TESTDBD_TEST_IMAGE=<image> replaces the
// Docker cells with one running that image (an official image, say). An
// unknown name gives a cell whose tests fail saying which names exist.
func Providers() []Provider {
	all := append(append([]Provider{nativeCell()}, dockerCells()...), kubernetesCell())
	sel := strings.TrimSpace(os.Getenv("TESTDBD_ENGINES"))
	if sel == "" {
		return all
	}
	var out []Provider
	picked := map[string]bool{}
	for _, tok := range strings.Split(sel, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		found := false
		for _, c := range all {
			if tok == c.ID || tok == c.Name || tok == c.Kind {
				found = true
				if !picked[c.Name] {
					picked[c.Name] = true
					out = append(out, c)
				}
			}
		}
		if !found {
			out = append(out, unknownCell(tok, all))
		}
	}
	// The native cell first, then the order of the matrix.
	order := map[string]int{}
	for i, c := range all {
		order[c.Name] = i
	}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Name] < order[out[j].Name] })
	return out
}

// EngineCells returns the selected cells for a test whose subject is the
// engine, not the provider: the long randomized reset proofs. They leave
// out the Kubernetes cell unless TESTDBD_ENGINES names it: its pods run
// the image of the Docker MariaDB 10.11 cell, and what sets it apart for a
// reset, a datadir the daemon cannot see, is what the native cell's
// binary-log mode runs the proof as. Each cell costs the full matrix
// minutes there.
func EngineCells() []Provider {
	named := false
	for _, tok := range strings.Split(os.Getenv("TESTDBD_ENGINES"), ",") {
		named = named || strings.HasPrefix(strings.TrimSpace(tok), "kubernetes")
	}
	var out []Provider
	for _, c := range Providers() {
		if c.Kind != "kubernetes" || named {
			out = append(out, c)
		}
	}
	return out
}

// Kind returns the selected cells of one kind: "native", "docker" or
// "kubernetes".
func Kind(kind string) []Provider {
	var out []Provider
	for _, c := range Providers() {
		if c.Kind == kind || c.Kind == "" {
			out = append(out, c)
		}
	}
	return out
}

var (
	nativeOnce   sync.Once
	nativeEngine testdbd.Engine
	nativeErr    error
)

// nativeCell is the host's server binary, named after its engine.
func nativeCell() Provider {
	nativeOnce.Do(func() {
		bin, err := native.FindBinary("")
		if err != nil {
			nativeErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nativeEngine, nativeErr = native.DetectEngine(ctx, bin)
	})
	c := Provider{Name: "native", ID: "native", Kind: "native",
		New: func(tb testing.TB) testdbd.Provider { return Native(tb) },
		Kill: func(tb testing.TB, s *instance.Member) {
			if err := syscall.Kill(s.Info(context.Background()).PID, syscall.SIGKILL); err != nil {
				tb.Fatalf("kill -9: %v", err)
			}
		},
	}
	if nativeErr == nil {
		mm := majorMinor(nativeEngine.Version)
		c.Name = "native-" + string(nativeEngine.Flavor) + "-" + mm
		c.ID = string(nativeEngine.Flavor) + "-" + mm + "-native"
	}
	return c
}

func dockerCells() []Provider {
	kill := func(tb testing.TB, s *instance.Member) {
		id := s.Info(context.Background()).ContainerID
		if out, err := exec.Command("docker", "kill", id).CombinedOutput(); err != nil {
			tb.Fatalf("docker kill %s: %v: %s", id, err, out)
		}
	}
	cell := func(id, image string) Provider {
		return Provider{Name: "docker-" + id, ID: id, Kind: "docker", Image: image,
			New:  func(tb testing.TB) testdbd.Provider { return Docker(tb, image) },
			Kill: kill}
	}
	if v := os.Getenv("TESTDBD_TEST_IMAGE"); v != "" {
		return []Provider{cell(strings.NewReplacer("/", "-", ":", "-").Replace(v), v)}
	}
	var out []Provider
	for _, d := range DockerImages {
		out = append(out, cell(d.ID, d.Image))
	}
	return out
}

// unknownCell fails the tests that run it, naming the cells that exist.
func unknownCell(name string, all []Provider) Provider {
	var names []string
	for _, c := range all {
		names = append(names, c.ID)
	}
	msg := fmt.Sprintf("TESTDBD_ENGINES names %q, which is no cell of the engine matrix: use %s, native, docker or kubernetes",
		name, strings.Join(names, ", "))
	fail := func(tb testing.TB) { tb.Helper(); tb.Fatal(msg) }
	return Provider{Name: "unknown-" + name, ID: name,
		New:  func(tb testing.TB) testdbd.Provider { fail(tb); return nil },
		Kill: func(tb testing.TB, _ *instance.Member) { fail(tb) }}
}

// majorMinor returns "10.11" for "10.11.19".
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// ServerOf starts one server of provider p, stopped at the end of the test.
func ServerOf(tb testing.TB, p Provider) *instance.Member {
	tb.Helper()
	return startMember(tb, p.New(tb), instance.FleetConfig{MaxInstances: 1, Logger: Logger(tb)}, p.Name)
}

// startMember starts one server of prov in a fleet of cfg, stopped at the
// end of the test; name says whose server in a failure.
func startMember(tb testing.TB, prov testdbd.Provider, cfg instance.FleetConfig, name string) *instance.Member {
	tb.Helper()
	f := instance.NewFleet(prov, cfg)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_ = f.Close(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := f.Start(ctx)
	if err != nil {
		tb.Fatalf("start %s server: %v", name, err)
	}
	return s
}
