package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/testdbd/testdbd/internal/testenv"
)

// TestLeaseLostInRestartSaysWhy: a lease held when the daemon is killed
// with -9 is answered for by the daemon started again on the state
// directory, wherever a user looks: GET /v1/leases/{id} (its state and
// ended reason), and the CLI's status, reset, renew and release.
func TestLeaseLostInRestartSaysWhy(t *testing.T) {
	state := testenv.StateDir(t)
	d := startDaemon(t, state)
	dir, _ := filepath.Abs(filepath.Join("..", "..", "examples", "migrations"))
	if code := d.call(t, "POST", "/v1/templates", `{"name":"app","migrations_dir":"`+dir+`","pool_size":1}`, nil); code != 200 {
		t.Fatalf("ensure template: %d", code)
	}
	var lease struct{ ID string }
	if code := d.call(t, "POST", "/v1/leases", `{"template":"app","strategy":"STRATEGY_SNAPSHOT"}`, &lease); code != 200 {
		t.Fatalf("acquire: %d", code)
	}
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited

	d = startDaemon(t, state)
	const why = "ended when the daemon restarted at"
	var got struct {
		State       string
		EndedReason string `json:"ended_reason"`
	}
	if code := d.call(t, "GET", "/v1/leases/"+lease.ID, "", &got); code != 200 || got.State != "failed" ||
		!strings.Contains(got.EndedReason, why) || !strings.Contains(got.EndedReason, "acquire a new one") {
		t.Errorf("GET /v1/leases/%s after the restart: %d %+v", lease.ID, code, got)
	}
	addr := "--addr=" + d.httpAddr
	if r := runCLI(t, ".", nil, "status", lease.ID, addr); r.code != 0 || !strings.Contains(r.stdout, why) {
		t.Errorf("testdbd status %s: exit %d, %q %q", lease.ID, r.code, r.stdout, r.stderr)
	}
	for _, cmd := range []string{"reset", "renew"} {
		if r := runCLI(t, ".", nil, cmd, lease.ID, addr); r.code != 1 || !strings.Contains(r.stderr, why) || !strings.Contains(r.stderr, "acquire a new one") {
			t.Errorf("testdbd %s %s: exit %d, %q", cmd, lease.ID, r.code, r.stderr)
		}
	}
	if r := runCLI(t, ".", nil, "release", lease.ID, addr); r.code != 0 || !strings.Contains(r.stderr, "had ended before this release: "+why) {
		t.Errorf("testdbd release %s: exit %d, %q %q", lease.ID, r.code, r.stdout, r.stderr)
	}
}
