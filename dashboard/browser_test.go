package dashboard_test

// The dashboard driven in real headless Chromium against a real daemon:
// it shows what the API says, follows changes made through the API, its
// actions work, and with --token it asks for the token and then works.
// Screenshots go to the test's temporary directory and, when
// TESTDBD_SCREENSHOT_DIR is set, there as well.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	_ "github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/internal/testenv"
)

const chromiumPath = "/usr/bin/chromium"

// problemsJS runs before the page's own scripts and records script errors,
// failed promises and Content-Security-Policy violations (an external or
// inline asset would be one), which the tests require to stay empty.
const problemsJS = `window.__problems = [];
addEventListener('error', (e) => window.__problems.push('error: ' + e.message));
addEventListener('unhandledrejection', (e) => window.__problems.push('rejection: ' + e.reason));
document.addEventListener('securitypolicyviolation', (e) => window.__problems.push('CSP: ' + e.violatedDirective + ' ' + e.blockedURI));`

// newBrowser starts headless Chromium for the test. It is closed at the end
// of the test, failed or not, and no process of it may remain.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	testenv.NeedFull(t, "the dashboard in a browser")
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("no " + chromiumPath + ": scripts/install-deps.sh browser installs it (make test-all does)")
	}
	dataDir, err := os.MkdirTemp("", "tdb-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(dataDir), chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(cctx)
		ccancel()
		cancel()
		acancel()
		if left := killChromium(dataDir, 5*time.Second); left > 0 {
			t.Errorf("%d Chromium processes outlived the browser; killed them", left)
		}
		os.RemoveAll(dataDir)
	})
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: problemsJS}); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// killChromium waits up to grace for the processes of the browser that uses
// dataDir to exit, then kills those left and says how many there were.
func killChromium(dataDir string, grace time.Duration) int {
	want := []byte("--user-data-dir=" + dataDir)
	find := func() []int {
		var pids []int
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range procs {
			b, _ := os.ReadFile(f)
			for _, arg := range strings.Split(string(b), "\x00") {
				if arg == string(want) {
					if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
						pids = append(pids, pid)
					}
					break
				}
			}
		}
		return pids
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if len(find()) == 0 {
			return 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	pids := find()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
}

func js(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// waitJS polls the page until expr is true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: not within 30 s (%v); the page reads:\n%s", what, err, text)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until the element sel's text holds every one of want.
func waitText(t *testing.T, ctx context.Context, sel string, want ...string) {
	t.Helper()
	b, _ := json.Marshal(want)
	waitJS(t, ctx, fmt.Sprintf("%s shows %v", sel, want), fmt.Sprintf(
		`(() => { const e = document.querySelector(%s); return !!e && %s.every((w) => e.innerText.includes(w)); })()`, js(sel), b))
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf(`(document.querySelector(%s) || {}).innerText || ''`, js(sel)))
}

// noProblems fails the test if the page had a script error or a CSP
// violation.
func noProblems(t *testing.T, ctx context.Context) {
	t.Helper()
	if p := eval[[]string](t, ctx, `window.__problems || []`); len(p) > 0 {
		t.Errorf("the page reported problems: %q", p)
	}
}

// screenshots saves the whole page, in the light and the dark scheme, wide
// and narrow, as <name>-*.png.
func screenshots(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	for _, v := range []struct {
		suffix        string
		width, height int64
		dark          bool
	}{{"", 1280, 900, false}, {"-dark", 1280, 900, true}, {"-narrow", 390, 844, false}, {"-narrow-dark", 390, 844, true}} {
		scheme := "light"
		if v.dark {
			scheme = "dark"
		}
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		}); err != nil {
			t.Fatal(err)
		}
		do(t, ctx, chromedp.EmulateViewport(v.width, v.height))
		time.Sleep(1700 * time.Millisecond) // a poll, and new rows' highlight fades
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		saveScreenshot(t, dir, name+v.suffix+".png", png)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
}

func saveScreenshot(t *testing.T, dir, name string, png []byte) {
	t.Helper()
	dirs := []string{dir}
	if env := os.Getenv("TESTDBD_SCREENSHOT_DIR"); env != "" {
		if err := os.MkdirAll(env, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, env)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", p)
	}
}

// fleet is what the realistic state holds: three templates (one failed),
// leases of all three strategies, resets of each.
type fleet struct {
	leases map[string]leaseJSON // by worker
}

const billingMigration = `-- +goose Up
CREATE TABLE customers (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE invoices (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id BIGINT UNSIGNED NOT NULL,
  cents BIGINT NOT NULL,
  issued_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT invoices_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
) ENGINE=InnoDB;
CREATE VIEW customer_totals AS SELECT customer_id, SUM(cents) AS cents FROM invoices GROUP BY customer_id;
`

func buildFleet(t *testing.T, d *daemon) fleet {
	t.Helper()
	mig, err := filepath.Abs("../examples/migrations")
	if err != nil {
		t.Fatal(err)
	}
	d.mustCall(200, "POST", "/v1/templates", fmt.Sprintf(`{"name":"app","migrations_dir":%q}`, mig), nil)
	body, _ := json.Marshal(map[string]any{
		"name":       "billing",
		"migrations": []map[string]string{{"name": "00001_billing.sql", "content": billingMigration}},
		"seed_sql":   "INSERT INTO customers (name) VALUES ('Ada'), ('Grace'); INSERT INTO invoices (customer_id, cents) VALUES (1, 1200), (2, 9900);",
		"pool_size":  1,
	})
	d.mustCall(200, "POST", "/v1/templates", string(body), nil)
	broken, _ := json.Marshal(map[string]any{
		"name":       "legacy",
		"migrations": []map[string]string{{"name": "00001_orders.sql", "content": "-- +goose Up\nCREATE TABLE orders (id INT PRIMARY KEY, total DECIMAL(10,2) NOT NULL DEFAULT);\n"}},
	})
	if code := d.call("POST", "/v1/templates", string(broken), nil); code == 200 {
		t.Fatal("a broken migration built")
	}

	f := fleet{leases: map[string]leaseJSON{}}
	for _, l := range []struct{ tpl, strategy, worker string }{
		{"app", "STRATEGY_SNAPSHOT", "gw0"}, {"app", "STRATEGY_TRUNCATE", "gw1"}, {"app", "STRATEGY_ROLLBACK", "gw2"},
		{"app", "STRATEGY_SNAPSHOT", "gw3"}, {"billing", "STRATEGY_TRUNCATE", "ci-7"}, {"billing", "STRATEGY_SNAPSHOT", "ci-8"},
	} {
		f.leases[l.worker] = d.acquire(l.tpl, l.strategy, l.worker)
	}
	f.resets(t, d, 2)
	return f
}

// resets has every lease's test write something (roll it back, for the
// rollback strategy) and then resets it, n times.
func (f fleet) resets(t *testing.T, d *daemon, n int) {
	t.Helper()
	for worker, l := range f.leases {
		if _, ok := d.activeLeases()[l.ID]; !ok {
			continue
		}
		db, err := sql.Open("mysql", l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxIdleConns(0) // a reset ends the lease's sessions
		for i := 0; i < n; i++ {
			var stmts []string
			if l.Template == "app" {
				stmts = []string{
					fmt.Sprintf("INSERT INTO users (email, name) VALUES ('%s-%d@example.com', 'Test %d')", worker, i, i),
					"INSERT INTO posts (user_id, title) SELECT MAX(id), 'Hello world' FROM users",
				}
			} else {
				stmts = []string{"INSERT INTO invoices (customer_id, cents) VALUES (1, 500)"}
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stmts {
				if _, err := tx.Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if worker == "gw2" {
				err = tx.Rollback()
			} else {
				err = tx.Commit()
			}
			if err != nil {
				t.Fatal(err)
			}
			d.mustCall(200, "POST", "/v1/leases/"+l.ID+":reset", "{}", nil)
		}
		db.Close()
	}
}

func TestDashboard(t *testing.T) {
	shots := t.TempDir()
	d := startDaemon(t, "")
	f := buildFleet(t, d)
	ctx := newBrowser(t)
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("http://"+d.addr+"/"))

	// What the API holds is on the page.
	waitText(t, ctx, "#servers", "mariadb", "native", "running", "on tmpfs")
	waitText(t, ctx, "#templates", "app", "billing", "legacy", "READY", "FAILED", "00001_orders.sql", "target")
	var ids []string
	for _, l := range f.leases {
		ids = append(ids, l.ID, l.Worker, l.Database)
	}
	waitText(t, ctx, "#leases", ids...)
	waitText(t, ctx, "#leases", "snapshot", "truncate", "rollback")
	waitJS(t, ctx, "every strategy has reset samples", `(() => {
		const rows = [...document.querySelectorAll('#latency tbody tr')].slice(0, 3);
		return rows.length === 3 && rows.every((tr) => Number(tr.cells[1].textContent.replace(/,/g, '')) > 0);
	})()`)
	waitText(t, ctx, "#latency", "reset truncate", "reset snapshot", "reset rollback", "acquire")
	waitJS(t, ctx, "the latency chart has bars", `document.querySelectorAll('#latency-chart rect').length >= 9`)
	// The recent resets and the errors (the failed template).
	waitJS(t, ctx, "the recent resets", `!document.getElementById('resets').hidden && document.querySelectorAll('#resets tbody tr').length > 0`)
	waitText(t, ctx, "#resets", "app", "reset", "snapshot")
	waitText(t, ctx, "#events", "template_failed", "legacy", "00001_orders.sql")
	if h := eval[string](t, ctx, `document.querySelector('#templates article[data-key="app"] code').title`); len(h) != 64 {
		t.Errorf("the full hash is not on the short one's title: %q", h)
	}
	checkLabelsAndClocks(t, ctx)
	checkBuildPhases(t, ctx, d)
	checkResetsStayOnOneLine(t, ctx, d, f)

	// The time left counts down between polls.
	sel := fmt.Sprintf(`#leases tr[data-key=%s] .ttl-text`, js(f.leases["gw0"].ID))
	before := text(t, ctx, sel)
	if !strings.Contains(before, "min") {
		t.Errorf("time left of a 15-minute lease: %q", before)
	}
	waitJS(t, ctx, "time left counts down", fmt.Sprintf(`document.querySelector(%s).innerText !== %s`, js(sel), js(before)))

	// More resets while the page watches, for the history sparkline (longer
	// when the screenshots are wanted).
	rounds := 3
	if os.Getenv("TESTDBD_SCREENSHOT_DIR") != "" {
		rounds = 12
	}
	for i := 0; i < rounds; i++ {
		f.resets(t, d, 1)
		time.Sleep(1500 * time.Millisecond)
	}
	waitJS(t, ctx, "the sparkline has lines", `document.querySelectorAll('#sparkline polyline').length >= 3`)
	screenshots(t, ctx, shots, "dashboard")

	// A lease released through the API leaves the page.
	gone := f.leases["ci-8"]
	d.mustCall(200, "DELETE", "/v1/leases/"+gone.ID, "", nil)
	waitJS(t, ctx, "the released lease's row is gone", fmt.Sprintf(`!document.querySelector('#leases tr[data-key=%s]')`, js(gone.ID)))

	// A lease that testdbd ends (its TTL runs out) leaves the list for the
	// ended ones, with why; one released by its holder does not.
	var short leaseJSON
	d.mustCall(200, "POST", "/v1/leases", `{"template":"billing","strategy":"STRATEGY_SNAPSHOT","ttl_seconds":4,"wait_timeout_ms":60000}`, &short)
	waitText(t, ctx, "#leases", short.ID)
	waitText(t, ctx, "#ended", short.ID, "expired", "after its TTL of 4s", "acquire a new lease")
	if got := text(t, ctx, "#ended"); strings.Contains(got, gone.ID) {
		t.Errorf("the lease its holder released is listed as ended by testdbd: %q", got)
	}

	// Release from the page: cancel first, then confirm.
	l := f.leases["gw3"]
	row := fmt.Sprintf(`#leases tr[data-key=%s]`, js(l.ID))
	do(t, ctx, chromedp.Click(chromedp.CSS(row+" button")))
	waitJS(t, ctx, "the confirmation dialog", `document.getElementById('confirm').open`)
	if got := text(t, ctx, "#confirm"); !strings.Contains(got, l.ID) || !strings.Contains(got, l.Worker) {
		t.Errorf("the dialog does not name the lease and its worker: %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.ID("confirm-cancel")))
	waitJS(t, ctx, "the dialog closed", `!document.getElementById('confirm').open`)
	time.Sleep(500 * time.Millisecond)
	if _, ok := d.activeLeases()[l.ID]; !ok {
		t.Fatal("cancel released the lease")
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(row+" button")))
	waitJS(t, ctx, "the confirmation dialog", `document.getElementById('confirm').open`)
	do(t, ctx, chromedp.Click(chromedp.ID("confirm-ok")))
	waitFor(t, "the lease released through the page", func() bool { _, ok := d.activeLeases()[l.ID]; return !ok })
	waitJS(t, ctx, "its row is gone", fmt.Sprintf(`!document.querySelector(%s)`, js(row)))
	waitText(t, ctx, "#alert", "Released lease "+l.ID)

	// Delete a template that still has a lease, with the keyboard only: the
	// dialog says the lease ends (force).
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#templates article[data-key="billing"] .actions button').focus()`),
		chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, "the confirmation dialog", `document.getElementById('confirm').open`)
	waitText(t, ctx, "#confirm", "Delete template billing?", "1 lease is held", "Delete and end 1 lease")
	if focused := eval[string](t, ctx, `document.activeElement.id`); focused != "confirm-cancel" {
		t.Errorf("the dialog opens with focus on %q, not on Cancel", focused)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter))
	waitFor(t, "the template deleted through the page", func() bool {
		return d.call("GET", "/v1/templates/billing", "", nil) == 404
	})
	waitJS(t, ctx, "its card is gone", `!document.querySelector('#templates article[data-key="billing"]')`)
	waitJS(t, ctx, "its lease's row is gone", fmt.Sprintf(`!document.querySelector('#leases tr[data-key=%s]')`, js(f.leases["ci-7"].ID)))
	waitText(t, ctx, "#ended", f.leases["ci-7"].ID, "template billing was deleted")
	noProblems(t, ctx)
}

// checkLabelsAndClocks: the overview's count of worker databases and the
// servers' count of every database say which they are, and the times of
// day carry their zone.
func checkLabelsAndClocks(t *testing.T, ctx context.Context) {
	t.Helper()
	if got := text(t, ctx, "#tiles"); !strings.Contains(got, "Worker databases") {
		t.Errorf("the overview does not say its databases are worker databases: %q", got)
	}
	th := eval[string](t, ctx, `(() => { const th = document.querySelectorAll('#servers th')[6]; return th.textContent + ' | ' + th.title; })()`)
	if !strings.HasPrefix(th, "All databases | ") || !strings.Contains(th, "template databases") {
		t.Errorf("the servers' databases column does not say it counts template databases too: %q", th)
	}
	clocks := eval[[]string](t, ctx, `[...document.querySelectorAll('#resets tbody td:first-child, #events tbody td:first-child')]
		.map((td) => td.firstChild.textContent).concat([document.getElementById('updated').textContent.replace(/^updated /, '')])`)
	zoned := regexp.MustCompile(`^\d\d:\d\d:\d\d (UTC|GMT[+-]\d{1,2}(:\d\d)?|[A-Z]{2,5})$`)
	if len(clocks) < 3 {
		t.Fatalf("only %d times of day on the page", len(clocks))
	}
	for _, c := range clocks {
		if !zoned.MatchString(c) {
			t.Errorf("time %q has no zone", c)
			break
		}
	}
}

// checkBuildPhases: every phase of a build that the API reports (a
// BuildTimings field above zero) has its segment in the card's build bar
// and its key below it; restore among them, for a template restored from
// the template cache (a second name for app's content).
func checkBuildPhases(t *testing.T, ctx context.Context, d *daemon) {
	t.Helper()
	mig, err := filepath.Abs("../examples/migrations")
	if err != nil {
		t.Fatal(err)
	}
	var cached struct{ Source string }
	d.mustCall(200, "POST", "/v1/templates", fmt.Sprintf(`{"name":"app-cached","migrations_dir":%q}`, mig), &cached)
	if cached.Source != "cache" {
		t.Fatalf("app's content under another name: source %q, want cache", cached.Source)
	}
	waitText(t, ctx, "#templates", "app-cached", "restored from the template cache")
	var list struct {
		Templates []struct {
			Name    string
			Current bool
			Build   map[string]float64
		}
	}
	d.mustCall(200, "GET", "/v1/templates", "", &list)
	restored := false
	for _, tpl := range list.Templates {
		if !tpl.Current {
			continue
		}
		for field, ms := range tpl.Build {
			if field == "total_ms" || ms <= 0 {
				continue
			}
			phase := strings.TrimSuffix(field, "_ms")
			restored = restored || phase == "restore"
			card := fmt.Sprintf(`#templates article[data-key=%s]`, js(tpl.Name))
			waitJS(t, ctx, fmt.Sprintf("template %s's build bar shows %s (%v ms)", tpl.Name, phase, ms), fmt.Sprintf(
				`!!document.querySelector(%s) && !!document.querySelector(%s)`, js(card+" svg.bar rect.p-"+phase), js(card+" .keys li.p-"+phase)))
		}
	}
	if !restored {
		t.Error("no template reports a restore phase")
	}
	d.mustCall(200, "DELETE", "/v1/templates/app-cached", "", nil)
	waitJS(t, ctx, "app-cached's card is gone", `!document.querySelector('#templates article[data-key="app-cached"]')`)
}

// checkResetsStayOnOneLine: at 1400 px, with a long note (a rollback
// reset that found committed writes), the recent resets' times, names,
// strategies and numbers do not wrap; the note does.
func checkResetsStayOnOneLine(t *testing.T, ctx context.Context, d *daemon, f fleet) {
	t.Helper()
	l := f.leases["gw2"] // rollback
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO users (email, name) VALUES ('committed@example.com', 'Committed')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	d.mustCall(200, "POST", "/v1/leases/"+l.ID+":reset", "{}", nil)
	do(t, ctx, chromedp.EmulateViewport(1400, 900))
	defer do(t, ctx, chromedp.EmulateViewport(1280, 900))
	waitText(t, ctx, "#resets", "writes were committed to")
	wrapped := eval[[]string](t, ctx, `(() => {
		const out = [];
		for (const tr of document.querySelectorAll('#resets tbody tr')) {
			for (let i = 0; i < 6; i++) {
				const walk = document.createTreeWalker(tr.cells[i], NodeFilter.SHOW_TEXT);
				for (let n = walk.nextNode(); n; n = walk.nextNode()) {
					if (!n.textContent.trim()) continue;
					const r = document.createRange();
					r.selectNodeContents(n);
					if (r.getClientRects().length > 1) out.push(tr.querySelector('code').textContent + ': ' + n.textContent);
				}
			}
		}
		return out;
	})()`)
	if len(wrapped) > 0 {
		t.Errorf("at 1400 px the recent resets wrap: %q", wrapped)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDashboardToken(t *testing.T) {
	const token = "s3cret-dashboard-token"
	shots := t.TempDir()
	d := startDaemon(t, token)

	// The page's files need no token; the API, /metrics and /openapi.json do.
	for _, p := range []string{"/", "/ui", "/ui/", "/ui/index.html", "/ui/app.js", "/ui/style.css", "/ui/icon.svg", "/healthz"} {
		if code := d.request("GET", p, "", false, nil); code != 200 {
			t.Errorf("GET %s without a token: %d, want 200", p, code)
		}
	}
	for _, p := range []string{"/v1/templates", "/v1/leases", "/v1/instances", "/v1/stats", "/v1/events",
		"/metrics", "/openapi.json", "/ui/nothing.js", "/ui/../v1/leases", "/favicon.ico", "/index.html"} {
		if code := d.request("GET", p, "", false, nil); code != 401 {
			t.Errorf("GET %s without a token: %d, want 401", p, code)
		}
	}
	for _, m := range []string{"POST", "DELETE", "PUT"} {
		if code := d.request(m, "/", "", false, nil); code != 401 {
			t.Errorf("%s / without a token: %d, want 401", m, code)
		}
	}
	for _, p := range []string{"/v1/templates", "/metrics", "/openapi.json"} {
		if code := d.request("GET", p, "", true, nil); code != 200 {
			t.Errorf("GET %s with the token: %d, want 200", p, code)
		}
	}
	mig, _ := filepath.Abs("../examples/migrations")
	d.mustCall(200, "POST", "/v1/templates", fmt.Sprintf(`{"name":"app","migrations_dir":%q}`, mig), nil)
	l := d.acquire("app", "STRATEGY_SNAPSHOT", "gw0")

	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate("http://"+d.addr+"/"))
	waitJS(t, ctx, "the token form", `!document.getElementById('auth').hidden && document.getElementById('content').hidden`)
	waitJS(t, ctx, "focus on the token field", `document.activeElement.id === 'token-input'`)
	waitText(t, ctx, "#conn", "Token needed")
	screenshotNow(t, ctx, shots, "dashboard-token.png")

	// A wrong token is refused and not kept.
	do(t, ctx, chromedp.SendKeys(chromedp.ID("token-input"), "wrong"), chromedp.Click(chromedp.CSS(`#token-form button`)))
	waitText(t, ctx, "#token-error", "refused")
	if got := eval[string](t, ctx, `sessionStorage.getItem('testdbd.token') || ''`); got != "" {
		t.Errorf("a refused token stays in session storage: %q", got)
	}

	do(t, ctx, chromedp.SendKeys(chromedp.ID("token-input"), token+"\r"))
	waitJS(t, ctx, "the dashboard", `document.getElementById('auth').hidden && !document.getElementById('content').hidden`)
	waitText(t, ctx, "#templates", "app", "READY")
	waitText(t, ctx, "#leases", l.ID, "gw0")
	if got := eval[string](t, ctx, `sessionStorage.getItem('testdbd.token')`); got != token {
		t.Errorf("session storage holds %q", got)
	}
	if n := eval[int](t, ctx, `localStorage.length`); n != 0 {
		t.Errorf("local storage has %d entries", n)
	}
	if loc := eval[string](t, ctx, `location.href + document.cookie`); strings.Contains(loc, token) || loc != "http://"+d.addr+"/" {
		t.Errorf("the address or a cookie changed: %q", loc)
	}
	if v := eval[string](t, ctx, `document.getElementById('token-input').value`); v != "" {
		t.Errorf("the token stays in the form: %q", v)
	}

	// A reload in the same tab keeps the token; the release action works with it.
	do(t, ctx, chromedp.Reload())
	waitText(t, ctx, "#leases", l.ID)
	if hidden := eval[bool](t, ctx, `document.getElementById('auth').hidden`); !hidden {
		t.Error("the reloaded page asks for the token again")
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#leases tr[data-key=%s] button`, js(l.ID)))))
	waitJS(t, ctx, "the confirmation dialog", `document.getElementById('confirm').open`)
	do(t, ctx, chromedp.Click(chromedp.ID("confirm-ok")))
	waitFor(t, "the lease released through the page", func() bool { _, ok := d.activeLeases()[l.ID]; return !ok })

	// Forget token: the page asks again.
	do(t, ctx, chromedp.Click(chromedp.ID("forget-token")))
	waitJS(t, ctx, "the token form again", `!document.getElementById('auth').hidden`)
	if got := eval[string](t, ctx, `sessionStorage.getItem('testdbd.token') || ''`); got != "" {
		t.Errorf("forgotten token stays in session storage: %q", got)
	}
	noProblems(t, ctx)

	if strings.Contains(d.logText(), token) {
		t.Error("the daemon's log holds the token")
	}
}

func screenshotNow(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, dir, name, png)
}
