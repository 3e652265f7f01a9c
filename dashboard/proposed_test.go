package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/testdbd/testdbd/dashboard"
)

// TestDashboardProposedAPI renders, from a stand-in API answering with the
// daemon's shapes, states a real daemon shows only for a moment: a build
// halfway through its migrations (progress), recent resets, errors and
// warnings (GET /v1/events), an instance's datadir_size_bytes.
func TestDashboardProposedAPI(t *testing.T) {
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	api := map[string]string{
		"/v1/instances": `{"instances":[{"id":"n-1","provider":"native","engine":"mariadb","version":"10.11.19",
			"host":"127.0.0.1","port":3307,"datadir":"/var/lib/testdbd/instances/n-1/tmpfs/data","datadir_on_tmpfs":true,
			"memory_bytes":"90000000","databases":5,"state":"running","pid":42,"datadir_bytes":"110100480",
			"datadir_size_bytes":"2147483648","started_at":"` + at(-time.Hour) + `","settings_mismatched":[]}]}`,
		"/v1/templates": `{"templates":[{"name":"app","hash":"1748795c1f2a00000000000000000000000000000000000000000000000000aa",
			"state":"TEMPLATE_STATE_BUILDING","engine":"mariadb 10.11.19","created_at":"` + at(-3*time.Second) + `",
			"build":{},"pool":{"target":2},
			"current":true,"source":"migrations","progress":{"phase":"migrating","step":2,"steps":3,"migration":"00003_views_and_seed.sql","elapsed_ms":1500}},
			{"name":"app","hash":"99aa00000000000000000000000000000000000000000000000000000000ffff","state":"TEMPLATE_STATE_READY",
			"engine":"mariadb 10.11.19","created_at":"` + at(-time.Hour) + `","build":{"total_ms":120},"pool":{"ready":1,"target":0},
			"tables":6,"current":false,"source":"cache","progress":{"phase":"done"}}]}`,
		"/v1/leases": `{"leases":[]}`,
		"/v1/stats": `{"resets":[{"strategy":"STRATEGY_SNAPSHOT","latency":{"count":"3","p50_ms":3.2,"p90_ms":4,"p99_ms":5,"max_ms":5}}],
			"acquire":{"count":"0"},"acquire_wait":{"count":"0"},"databases":5}`,
		"/v1/events": `{"resets":[
			{"seq":"12","at":"` + at(-time.Second) + `","template":"app","instance_id":"n-1","trigger":"release",
			 "report":{"lease_id":"l-1","strategy":"STRATEGY_SNAPSHOT","requested_strategy":"STRATEGY_ROLLBACK",
			 "fallback_reason":"rows were committed: restored them","total_ms":4.25,"tables_total":6,
			 "tables_reset":["audit_log","posts"],"schema_changes":[],"database":"tdb_app_w1"},"error":""},
			{"seq":"10","at":"` + at(-2*time.Second) + `","template":"app","instance_id":"n-1","trigger":"reset",
			 "report":{"lease_id":"l-2","strategy":"STRATEGY_TRUNCATE","requested_strategy":"STRATEGY_TRUNCATE",
			 "total_ms":0,"tables_total":6,"tables_reset":[],"database":"tdb_app_w2"},"error":"server instance n-1 died"}],
			"events":[{"seq":"11","at":"` + at(-time.Second) + `","level":"error","kind":"recycle_failed",
			 "message":"recycle worker database; dropping it","template":"app","database":"tdb_app_w3"}]}`,
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", dashboard.Handler())
	mux.Handle("GET /ui/", dashboard.Handler())
	mux.HandleFunc("GET /v1/", func(w http.ResponseWriter, r *http.Request) {
		body, ok := api[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"))
	waitText(t, ctx, "#servers", "105 MiB of 2.0 GiB")
	waitJS(t, ctx, "the tmpfs note is hidden", `document.getElementById('tmpfs-note').hidden`)
	waitText(t, ctx, "#templates article[data-key=app] header", "BUILDING", "migrating 2/3: 00003_views_and_seed.sql (1.5 s)")
	waitText(t, ctx, `#templates article[data-key="app@99aa00000000"] header`, "app (older build)", "READY")
	waitText(t, ctx, `#templates article[data-key="app@99aa00000000"]`, "restored from the template cache")
	waitText(t, ctx, "#resets", "tdb_app_w1", "release", "snapshot", "asked: rollback", "4.25", "2 of 6", "audit_log, posts",
		"rows were committed", "server instance n-1 died")
	waitText(t, ctx, "#events", "error", "recycle_failed", "recycle worker database; dropping it", "template app, database tdb_app_w3")
	if !eval[bool](t, ctx, `document.getElementById('events-unavailable').hidden && document.getElementById('resets-empty').hidden`) {
		t.Error("the page says events are not available")
	}
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#resets tbody tr')].map((tr) => tr.dataset.key)`)
	if strings.Join(rows, ",") != "12,10" {
		t.Errorf("reset rows %v, want newest first: 12,10", rows)
	}
	screenshotNow(t, ctx, t.TempDir(), "dashboard-proposed.png")
	noProblems(t, ctx)
}
