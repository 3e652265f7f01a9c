package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/internal/testenv"
)

// call sends a JSON request to the daemon, decodes the answer into v (when
// not nil) and returns the HTTP status.
func (p *proc) call(t *testing.T, method, path, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.httpAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
			t.Fatalf("%s %s: %d %v: %s", method, path, resp.StatusCode, err, b)
		}
	}
	return resp.StatusCode
}

// TestRESTFlow drives a template, a lease, a reset and a release through the
// REST API of the daemon binary, the way the README's quickstart does.
func TestRESTFlow(t *testing.T) {
	d := startDaemon(t, testenv.StateDir(t))
	dir, _ := filepath.Abs(filepath.Join("..", "..", "examples", "migrations"))

	// GET /v1/events answers what docs/rest-api.md says, before anything
	// has happened too.
	var events struct{ Resets, Events []json.RawMessage }
	code := d.call(t, "GET", "/v1/events", "", &events)
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "rest-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### GET /v1/events")
	section, _, _ = strings.Cut(section, "\n### ")
	claims := regexp.MustCompile(`HTTP (\d{3})`).FindAllStringSubmatch(section, -1)
	if len(claims) == 0 {
		t.Error("docs/rest-api.md does not say what GET /v1/events answers")
	}
	for _, c := range claims {
		if c[1] != strconv.Itoa(code) {
			t.Errorf("docs/rest-api.md says GET /v1/events answers HTTP %s; it answers %d", c[1], code)
		}
	}
	if code != 200 || events.Resets == nil || events.Events == nil || len(events.Resets)+len(events.Events) != 0 {
		t.Errorf("GET /v1/events of a new daemon: %d %+v, want 200 and empty lists", code, events)
	}

	var tpl struct {
		Name, Hash, State, Error string
		Tables                   int
		Build                    map[string]float64
		Pool                     map[string]int
	}
	if code := d.call(t, "POST", "/v1/templates", `{"name":"app","migrations_dir":"`+dir+`"}`, &tpl); code != 200 {
		t.Fatalf("ensure template: %d %+v", code, tpl)
	}
	if tpl.State != "TEMPLATE_STATE_READY" || len(tpl.Hash) != 64 || tpl.Tables != 6 || tpl.Build["total_ms"] <= 0 ||
		tpl.Build["migrate_ms"] <= 0 || tpl.Pool["ready"] < 1 {
		t.Fatalf("template: %+v", tpl)
	}

	var lease struct {
		ID, DSN, Host, User, Password, Database, State, URL string
		Port                                                int
	}
	if code := d.call(t, "POST", "/v1/leases", `{"template":"app","strategy":"STRATEGY_TRUNCATE","ttl_seconds":60}`, &lease); code != 200 {
		t.Fatalf("acquire: %d %+v", code, lease)
	}
	if lease.State != "active" || !strings.HasPrefix(lease.URL, "mysql://") || lease.Port == 0 {
		t.Fatalf("lease: %+v", lease)
	}
	db, err := sql.Open("mysql", lease.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO users (email, name) VALUES ('rest@x', 'r')"); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Strategy          string
		RequestedStrategy string  `json:"requested_strategy"`
		TotalMs           float64 `json:"total_ms"`
		Phases            map[string]float64
		TablesReset       []string `json:"tables_reset"`
		TablesTotal       int      `json:"tables_total"`
	}
	if code := d.call(t, "POST", "/v1/leases/"+lease.ID+":reset", `{}`, &report); code != 200 {
		t.Fatalf("reset: %d", code)
	}
	if report.TotalMs <= 0 || report.TablesTotal != 6 || strings.Join(report.TablesReset, ",") != "users" {
		t.Errorf("report: %+v", report)
	}
	for _, phase := range []string{"detect_ms", "restore_ms", "sessions_ms", "verify_ms", "schema_ms"} {
		if _, ok := report.Phases[phase]; !ok {
			t.Errorf("report lacks phase %s", phase)
		}
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n != 3 {
		t.Errorf("after reset: %d users, %v", n, err)
	}

	var stats struct {
		Resets []struct {
			Strategy string
			Latency  struct {
				Count  int
				P50Ms  float64 `json:"p50_ms"`
				MaxMs  float64 `json:"max_ms"`
				MeanMs float64 `json:"mean_ms"`
			}
		}
	}
	d.call(t, "GET", "/v1/stats", "", &stats)
	if len(stats.Resets) != 3 || stats.Resets[0].Strategy != "STRATEGY_TRUNCATE" || stats.Resets[0].Latency.Count != 1 {
		t.Errorf("stats: %+v", stats)
	}
	resp, _ := http.Get("http://" + d.httpAddr + "/metrics")
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`testdbd_reset_seconds_count{strategy="truncate"} 1`, "testdbd_reset_phase_seconds", "testdbd_acquire_seconds", "testdbd_leases_acquired_total 1"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	var released struct{ State string }
	if code := d.call(t, "DELETE", "/v1/leases/"+lease.ID, "", &released); code != 200 || released.State != "released" {
		t.Errorf("release: %d %+v", code, released)
	}
	var errBody struct {
		Code    int
		Message string
	}
	bad := []struct {
		method, path, body string
		status             int
		says               string
	}{
		{"POST", "/v1/leases", `{"template":`, 400, ""},
		{"POST", "/v1/leases", `{"template":"app","bogus":1}`, 400, "openapi.json"},
		{"POST", "/v1/leases", `{"template":"nope"}`, 404, "no template"},
		{"POST", "/v1/leases", `{"template":"app","strategy":"fastest"}`, 400, "STRATEGY_SNAPSHOT"},
		{"POST", "/v1/leases", `{"template":"app","ttl_seconds":-5}`, 400, "negative"},
		{"GET", "/v1/leases/l-nope", "", 404, "no lease"},
		{"POST", "/v1/leases/" + lease.ID + ":reset", `{}`, 400, "released"},
		{"POST", "/v1/templates", `{"name":"x","migrations":[{"name":"../00001_a.sql","content":"-- +goose Up\nSELECT 1;"}]}`, 400, "plain file name"},
		{"POST", "/v1/templates", `{"name":"x` + "`" + `y","migrations_dir":"/tmp"}`, 400, "not valid"},
		{"GET", "/v1/templates/nope", "", 404, "no template"},
		{"DELETE", "/v1/templates/nope", "", 404, "no template"},
	}
	for _, c := range bad {
		errBody.Message = ""
		code := d.call(t, c.method, c.path, c.body, &errBody)
		if code != c.status || !strings.Contains(errBody.Message, c.says) {
			t.Errorf("%s %s %s: %d %q, want %d and a message with %q", c.method, c.path, c.body, code, errBody.Message, c.status, c.says)
		}
	}
	// The daemon still serves after bad input.
	if code := d.call(t, "POST", "/v1/leases", `{"template":"app"}`, &lease); code != 200 {
		t.Errorf("acquire after bad input: %d", code)
	}
}
