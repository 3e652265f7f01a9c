package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/internal/testenv"
)

// needDocker skips the test in the quick tier, when no Docker engine is
// reachable and when the image under test is missing, naming what builds it.
func needDocker(t *testing.T) {
	t.Helper()
	testenv.NeedImage(t, docker.DefaultImage)
}

// containersOf lists the ids of the containers of a state directory, and
// removes them at the end of the test whatever happens.
func containersOf(t *testing.T, stateDir string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--no-trunc", "--filter", "label="+docker.LabelStateDir+"="+stateDir).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

func removeContainersAtEnd(t *testing.T, stateDir string) {
	t.Cleanup(func() {
		if ids := containersOf(t, stateDir); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
}

type dockerInstanceJSON struct {
	ID             string      `json:"id"`
	Provider       string      `json:"provider"`
	ContainerID    string      `json:"container_id"`
	Image          string      `json:"image"`
	DatadirOnTmpfs bool        `json:"datadir_on_tmpfs"`
	MemoryBytes    json.Number `json:"memory_bytes"`
	State          string      `json:"state"`
	Settings       []struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	} `json:"settings"`
}

// postJSON posts v as JSON to path and decodes the 200 response into out.
func (p *proc) postJSON(t *testing.T, path string, v, out any) {
	t.Helper()
	body, _ := json.Marshal(v)
	if code := p.call(t, "POST", path, string(body), out); code != 200 {
		t.Fatalf("POST %s: %d", path, code)
	}
}

func (p *proc) dockerInstances(t *testing.T) []dockerInstanceJSON {
	var list struct {
		Instances []dockerInstanceJSON `json:"instances"`
	}
	p.getJSON(t, "/v1/instances", &list)
	return list.Instances
}

func TestDockerDaemonServesAndStopsCleanly(t *testing.T) {
	needDocker(t)
	state := testenv.StateDir(t)
	removeContainersAtEnd(t, state)
	d := startDaemon(t, state, "--provider", "docker", "--warm", "1")
	insts := d.dockerInstances(t)
	if len(insts) != 1 {
		t.Fatalf("%d instances after --warm 1", len(insts))
	}
	in := insts[0]
	if in.Provider != "docker" || in.Image != docker.DefaultImage || in.ContainerID == "" ||
		!in.DatadirOnTmpfs || in.State != "running" || in.MemoryBytes.String() == "0" || len(in.Settings) == 0 {
		t.Errorf("instance: %+v", in)
	}
	for _, s := range in.Settings {
		if !s.OK {
			t.Errorf("setting %s did not take", s.Name)
		}
	}
	if ids := containersOf(t, state); len(ids) != 1 || ids[0] != in.ContainerID {
		t.Fatalf("containers of the daemon: %v, want [%s]", ids, in.ContainerID)
	}

	// A lease's database lives in the container: the lease user writes to
	// it over TCP, and the server reports the container's tmpfs datadir.
	var tpl struct {
		State string `json:"state"`
		Error string `json:"error"`
	}
	d.postJSON(t, "/v1/templates", map[string]any{"name": "dk", "migrations": []map[string]string{{
		"name": "00001_init.sql", "content": "-- +goose Up\nCREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT);\n",
	}}}, &tpl)
	if tpl.State != "TEMPLATE_STATE_READY" {
		t.Fatalf("template: %+v", tpl)
	}
	var ls struct {
		ID         string `json:"id"`
		DSN        string `json:"dsn"`
		InstanceID string `json:"instance_id"`
	}
	d.postJSON(t, "/v1/leases", map[string]any{"template": "dk", "strategy": "STRATEGY_TRUNCATE"}, &ls)
	if ls.InstanceID != in.ID {
		t.Errorf("lease on instance %q, want the container's %q", ls.InstanceID, in.ID)
	}
	cfg, err := mysql.ParseDSN(ls.DSN)
	if err != nil {
		t.Fatalf("lease dsn %q: %v", ls.DSN, err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var datadir string
	if _, err := db.Exec("INSERT INTO t (v) VALUES ('x')"); err != nil {
		t.Fatalf("lease user writes: %v", err)
	}
	if err := db.QueryRow("SELECT @@datadir").Scan(&datadir); err != nil || strings.TrimSuffix(datadir, "/") != docker.Datadir {
		t.Errorf("lease's server datadir %q (%v), want the container's %s", datadir, err, docker.Datadir)
	}
	db.Close()

	d.terminate(t, 30*time.Second)
	if ids := containersOf(t, state); len(ids) != 0 {
		t.Errorf("containers left after SIGTERM: %v", ids)
	}
}

func TestDockerDaemonKilledIsCleanedUpOnRestart(t *testing.T) {
	needDocker(t)
	state := testenv.StateDir(t)
	removeContainersAtEnd(t, state)
	d := startDaemon(t, state, "--provider", "docker", "--warm", "2", "--max-instances", "2")
	if n := len(d.dockerInstances(t)); n != 2 {
		t.Fatalf("%d instances after --warm 2", n)
	}
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	old := containersOf(t, state)
	if len(old) != 2 {
		t.Fatalf("after kill -9: containers %v, want the 2 servers still there", old)
	}

	d2 := startDaemon(t, state, "--provider", "docker")
	for _, id := range old {
		if err := exec.Command("docker", "inspect", id).Run(); err == nil {
			t.Errorf("container %s of the killed daemon still exists", id[:12])
		}
	}
	if n := len(d2.dockerInstances(t)); n != 0 {
		t.Errorf("restarted daemon lists %d instances, want 0", n)
	}
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	<-d2.exited
	if ids := containersOf(t, state); len(ids) != 0 {
		t.Errorf("containers left after SIGTERM: %v", ids)
	}
}

// TestProviderAutoPicksDocker: with no server binary, --provider auto
// starts the Docker provider.
func TestProviderAutoPicksDocker(t *testing.T) {
	needDocker(t)
	state := testenv.StateDir(t)
	removeContainersAtEnd(t, state)
	cfg := serveConfig{Provider: "auto", Mysqld: filepath.Join(state, "no-such-mysqld"), StateDir: state,
		Image: docker.DefaultImage, TmpfsSize: 256 << 20}
	p, err := openProvider(context.Background(), cfg, testenv.Logger(t))
	if err != nil {
		t.Fatalf("--provider auto without a server binary: %v", err)
	}
	defer p.Close(context.Background())
	if p.Name() != "docker" {
		t.Errorf("--provider auto picked %s, want docker", p.Name())
	}
}
