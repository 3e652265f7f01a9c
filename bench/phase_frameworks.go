package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The frameworks phase: the example applications' own suites (Django's
// test runner, Laravel's PHPUnit), whole, serial and on parallel workers,
// with testdbd and with each framework's own way of getting clean
// databases on a server of the suite's own.
var frameworksPhase = &Phase[frameworksPlan, frameworksResults]{
	Name:   "frameworks",
	Full:   frameworksPlan{Workers: []int{1, 4}, Reps: 2},
	Quick:  frameworksPlan{Workers: []int{4}, Reps: 1, Only: []string{"laravel/testdbd", "django/testdbd"}},
	Run:    runFrameworks,
	Report: reportFrameworks,
}

type frameworksPlan struct {
	// Workers are the process counts each variant runs on (1: the
	// framework's serial runner), Reps times, interleaved.
	Workers []int `json:"workers"`
	Reps    int   `json:"reps"`
	// Only limits the variants (ids); empty: all.
	Only []string `json:"only,omitempty"`
}

type frameworksResults struct {
	Runs []frameworkRun `json:"runs"`
	// Skipped names the frameworks not measured and why (a tool missing).
	Skipped map[string]string `json:"skipped,omitempty"`
}

// frameworkRun is one run of a suite: the command's start to its end.
type frameworkRun struct {
	Variant string   `json:"variant"`
	Workers int      `json:"workers"`
	WallMs  float64  `json:"wall_ms"`
	Tests   int      `json:"tests"`
	Failed  []string `json:"failed,omitempty"` // the tests that failed or errored
}

// frameworkVariant is one way a suite gets its clean databases.
type frameworkVariant struct {
	id, label string
	framework string // "django" or "laravel": the example it runs
	server    string // "testdbd", or the baseline server: "disk" or "tmpfs"
	// env returns the variant's environment on top of the suite's; cmd its
	// command on workers processes.
	env func(s *suiteEnv) []string
	cmd func(workers int) []string
}

// The variants, in the report's order.
var frameworkVariants = []frameworkVariant{
	{id: "laravel/testdbd", label: "testdbd (TestdbdDatabase trait, snapshot)", framework: "laravel", server: "testdbd",
		env: func(s *suiteEnv) []string { return s.testdbd }, cmd: laravelCmd(true)},
	{id: "laravel/refresh-tmpfs", label: "RefreshDatabase, tmpfs server", framework: "laravel", server: "tmpfs",
		env: laravelOwn("RefreshDatabase"), cmd: laravelCmd(false)},
	{id: "laravel/truncation-tmpfs", label: "DatabaseTruncation, tmpfs server", framework: "laravel", server: "tmpfs",
		env: laravelOwn("DatabaseTruncation"), cmd: laravelCmd(false)},
	{id: "laravel/truncation-disk", label: "DatabaseTruncation, disk server", framework: "laravel", server: "disk",
		env: laravelOwn("DatabaseTruncation"), cmd: laravelCmd(false)},
	{id: "django/testdbd", label: "testdbd (testdbd.django.TestRunner)", framework: "django", server: "testdbd",
		env: func(s *suiteEnv) []string { return s.testdbd }, cmd: djangoCmd(nil)},
	{id: "django/own-tmpfs", label: "Django's runner (test database, clones), tmpfs server", framework: "django", server: "tmpfs",
		env: djangoOwn, cmd: djangoCmd([]string{"--testrunner", "django.test.runner.DiscoverRunner"})},
	{id: "django/own-disk", label: "Django's runner (test database, clones), disk server", framework: "django", server: "disk",
		env: djangoOwn, cmd: djangoCmd([]string{"--testrunner", "django.test.runner.DiscoverRunner"})},
}

// laravelCmd is PHPUnit on one process, or the example's paratest-compatible
// runner on more; testdbd's runs pass --without-databases, as
// `php artisan test --parallel --without-databases` does (otherwise Laravel
// creates a database per worker for suites with RefreshDatabase).
func laravelCmd(testdbd bool) func(int) []string {
	return func(workers int) []string {
		if workers == 1 {
			return []string{"phpunit"}
		}
		cmd := []string{"php", "paratest.php", "--processes", strconv.Itoa(workers)}
		if testdbd {
			cmd = append(cmd, "--without-databases")
		}
		return cmd
	}
}

// djangoTests are the Django example's test classes written with Django's
// own test cases (the others use testdbd's, which need its runner): every
// variant runs these.
var djangoTests = []string{"blog.tests.Seeded", "blog.tests.WithTestData", "blog.tests.Flushes", "blog.tests.KeepsSeed"}

func djangoCmd(extra []string) func(int) []string {
	return func(workers int) []string {
		cmd := append([]string{djangoPython(), "manage.py", "test", "--no-input"}, extra...)
		if workers > 1 {
			cmd = append(cmd, "--parallel", strconv.Itoa(workers))
		}
		return append(cmd, djangoTests...)
	}
}

// laravelOwn: the suite's TestCase with Laravel's own trait (the example's
// EXAMPLE_RESET), on the baseline server's "shop" database.
func laravelOwn(reset string) func(*suiteEnv) []string {
	return func(s *suiteEnv) []string {
		ep := s.server.client
		return []string{"EXAMPLE_RESET=" + reset, "DB_HOST=" + ep.Host, "DB_PORT=" + strconv.Itoa(ep.Port),
			"DB_DATABASE=shop", "DB_USERNAME=" + ep.User, "DB_PASSWORD=" + ep.Password}
	}
}

// djangoOwn: Django creates test_app (and its clones test_app_1…N for
// --parallel) on the baseline server.
func djangoOwn(s *suiteEnv) []string {
	ep := s.server.client
	return []string{fmt.Sprintf("DATABASE_URL=mysql://%s:%s@%s:%d/app", ep.User, ep.Password, ep.Host, ep.Port)}
}

// suiteEnv is what a variant's run needs: the testdbd daemon's
// environment (TESTDBD_ADDR and the template's pin) or a baseline server.
type suiteEnv struct {
	testdbd []string
	server  *baseServer
}

// frameworkTools are the commands each framework's suite needs.
var frameworkTools = map[string][]string{
	"laravel": {"php", "phpunit"},
	"django":  {"python3"},
}

// djangoPython is the first Python that imports Django: the one on PATH,
// or Debian's, which Debian's python3-django installs into (a PATH of
// pyenv or a virtualenv may hide it).
func djangoPython() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import django").Run() == nil {
			return py
		}
	}
	return "python3"
}

// frameworkVariantsFor is the plan's variants whose framework's tools are
// installed; the others are recorded in r.Skipped.
func frameworkVariantsFor(b *bench, p frameworksPlan, r *frameworksResults) []frameworkVariant {
	variants := slices.DeleteFunc(slices.Clone(frameworkVariants), func(v frameworkVariant) bool {
		return len(p.Only) > 0 && !slices.Contains(p.Only, v.id)
	})
	r.Skipped = map[string]string{}
	for fw, tools := range frameworkTools {
		if why := missingTools(fw, tools); why != "" {
			r.Skipped[fw] = why
			b.progress("frameworks: %s", why)
		}
	}
	return slices.DeleteFunc(variants, func(v frameworkVariant) bool { return r.Skipped[v.framework] != "" })
}

func runFrameworks(ctx context.Context, b *bench, p frameworksPlan, r *frameworksResults) error {
	root, err := repoRoot(ctx)
	if err != nil {
		return err
	}
	variants := frameworkVariantsFor(b, p, r)
	if len(variants) == 0 {
		return nil
	}
	disk, tmpfs, err := b.baselines(ctx)
	if err != nil {
		return err
	}
	state, err := b.newStateDir(false)
	if err != nil {
		return err
	}
	d, err := b.startDaemon(ctx, "frameworks", state)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	pins := map[string][]string{}
	for _, v := range variants {
		if v.server == "testdbd" && pins[v.framework] == nil {
			b.progress("frameworks: building the %s example's template", v.framework)
			if pins[v.framework], err = ensureExampleTemplate(ctx, b, d, root, v.framework); err != nil {
				return err
			}
		}
	}
	for _, s := range []*baseServer{disk, tmpfs} {
		if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS shop; CREATE DATABASE IF NOT EXISTS app"); err != nil {
			return fmt.Errorf("%s server: %w", s.name, err)
		}
	}
	return runFrameworkCells(ctx, b, p, r, root, frameworkCells(variants, p.Workers), func(v frameworkVariant) []string {
		s := &suiteEnv{testdbd: pins[v.framework], server: tmpfs}
		if v.server == "disk" {
			s.server = disk
		}
		return append(exampleEnv(b, root, v.framework), v.env(s)...)
	})
}

// frameworkCell is one variant's suite on a number of worker processes.
type frameworkCell struct {
	v       frameworkVariant
	workers int
}

func frameworkCells(variants []frameworkVariant, workers []int) []frameworkCell {
	var cells []frameworkCell
	for _, v := range variants {
		for _, w := range workers {
			cells = append(cells, frameworkCell{v, w})
		}
	}
	return cells
}

// runFrameworkCells runs every cell p.Reps times, in an order that changes
// from one repetition to the next; root is the repository's root and env
// gives a variant's environment.
func runFrameworkCells(ctx context.Context, b *bench, p frameworksPlan, r *frameworksResults,
	root string, cells []frameworkCell, env func(frameworkVariant) []string) error {
	for rep := range p.Reps {
		for _, c := range batchOrder(cells, rep) {
			run, out, err := runExampleSuite(ctx, filepath.Join(root, "examples", c.v.framework), env(c.v), c.v.cmd(c.workers))
			if err != nil {
				return fmt.Errorf("%s on %d workers: %w\n%s", c.v.id, c.workers, err, tailLines(out, 30))
			}
			run.Variant, run.Workers = c.v.id, c.workers
			r.Runs = append(r.Runs, run)
			b.progress("frameworks %d/%d: %s on %d workers: %.1f s, %d tests, %d failed", rep+1, p.Reps, c.v.id, c.workers,
				run.WallMs/1000, run.Tests, len(run.Failed))
		}
	}
	return nil
}

// missingTools names what framework's suite lacks, or "".
func missingTools(framework string, tools []string) string {
	if framework == "django" && exec.Command(djangoPython(), "-c", "import django, pymysql, dj_database_url").Run() != nil {
		return "django skipped: Django, PyMySQL or dj-database-url is not installed (make deps-examples installs them)"
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Sprintf("%s skipped: %s is not installed (make deps-examples installs it)", framework, t)
		}
	}
	return ""
}

// repoRoot is the repository's root directory (the root module's).
func repoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/testdbd/testdbd").Output()
	if err != nil {
		return "", fmt.Errorf("finding the repository's root (go list -m; run the benchmark inside bench/): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// exampleEnv is the environment every run of an example's suite gets:
// the daemon's binary first on PATH (the suites call the CLI), the
// checkout's SDKs, and caches out of the tree.
func exampleEnv(b *bench, root, framework string) []string {
	env := append(os.Environ(), "PATH="+filepath.Dir(b.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+filepath.Join(root, "clients", "python", "src"))
	if framework == "laravel" {
		env = append(env, "APP_SERVICES_CACHE="+filepath.Join(b.tmp, "laravel-services.php"),
			"APP_PACKAGES_CACHE="+filepath.Join(b.tmp, "laravel-packages.php"))
	}
	return env
}

// exampleTemplates are the template ensure commands of the examples, as
// their run.sh scripts give them (Django's without the installed Django's
// own migrations among the hashed files: they only key the daemon's
// cache, which each run here starts without).
var exampleTemplates = map[string][]string{
	"laravel": {"template", "ensure", "--name", "laravel-shop", "--format", "env",
		"--hash-files", "database/migrations/**", "--hash-files", "database/seeders/**",
		"--", "php", "artisan", "migrate", "--force", "--seed"},
	"django": {"template", "ensure", "--name", "django-app", "--format", "env",
		"--hash-files", "blog/migrations/*.py", "--hash-files", "mysite/settings.py",
		"--", "PYTHON", "manage.py", "migrate", "--no-input"},
}

// ensureExampleTemplate builds an example's template on d and returns the
// environment its suite runs with: the daemon's address and the lines
// `template ensure --format env` printed (the template and its pin).
func ensureExampleTemplate(ctx context.Context, b *bench, d *daemon, root, framework string) ([]string, error) {
	addr := "TESTDBD_ADDR=" + strings.TrimPrefix(d.api.Addr(), "http://")
	args := slices.Clone(exampleTemplates[framework])
	if i := slices.Index(args, "PYTHON"); i >= 0 {
		args[i] = djangoPython()
	}
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Dir = filepath.Join(root, "examples", framework)
	cmd.Env = append(exampleEnv(b, root, framework), addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s template: %w\n%s", framework, err, tailLines(stderr.String(), 30))
	}
	env := []string{addr}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "TESTDBD_") {
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			env = append(env, k+"="+strings.Trim(v, "'"))
		}
	}
	return env, nil
}

// runExampleSuite runs a suite's command in dir and times it. A suite
// whose tests fail is a result (their names are kept); one that could not
// run (no test reported) is an error.
func runExampleSuite(ctx context.Context, dir string, env, argv []string) (frameworkRun, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	run := frameworkRun{WallMs: round3(ms(time.Since(start)))}
	run.Tests, run.Failed = parseSuiteOutput(out.String())
	if run.Tests == 0 {
		if err == nil {
			err = fmt.Errorf("no test ran")
		}
		return run, out.String(), err
	}
	return run, out.String(), nil
}

var (
	// PHPUnit's lines, also as the example's parallel runner prints them
	// ("[worker 2] OK (10 tests, 30 assertions)").
	phpunitOK      = regexp.MustCompile(`(?m)^(?:\[worker \d+\] )?OK \((\d+) tests?`)
	phpunitTotals  = regexp.MustCompile(`(?m)^(?:\[worker \d+\] )?Tests: (\d+),`)
	phpunitFailure = regexp.MustCompile(`(?m)^(?:\[worker \d+\] )?\d+\) ([\w\\]+::\w+)`)
	djangoRan      = regexp.MustCompile(`(?m)^Ran (\d+) tests? in`)
	djangoFailure  = regexp.MustCompile(`(?m)^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)`)
)

// parseSuiteOutput reads the test count and the failed tests from
// PHPUnit's or Django's summary (summed over the workers' summaries where
// a parallel runner prints one per worker).
func parseSuiteOutput(out string) (tests int, failed []string) {
	for _, re := range []*regexp.Regexp{phpunitOK, phpunitTotals, djangoRan} {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(m[1])
			tests += n
		}
	}
	for _, m := range phpunitFailure.FindAllStringSubmatch(out, -1) {
		failed = append(failed, m[1])
	}
	for _, m := range djangoFailure.FindAllStringSubmatch(out, -1) {
		id := m[2] // "app.tests.Class.test" (Python 3.11), or "app.tests.Class"
		if !strings.HasSuffix(id, "."+m[1]) {
			id += "." + m[1]
		}
		failed = append(failed, id)
	}
	slices.Sort(failed)
	return tests, slices.Compact(failed)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// frameworkMedian is the median wall time of a variant's runs on workers,
// and the tests that failed in any of them.
func frameworkMedian(r *frameworksResults, variant string, workers int) (float64, int, []string) {
	var xs []float64
	var failed []string
	tests := 0
	for _, run := range r.Runs {
		if run.Variant == variant && run.Workers == workers {
			xs = append(xs, run.WallMs)
			failed = append(failed, run.Failed...)
			tests = run.Tests
		}
	}
	slices.Sort(failed)
	return median(xs), tests, slices.Compact(failed)
}

func reportFrameworks(rep *report, p frameworksPlan, r *frameworksResults) {
	rep.section("Whole suites of the example applications", fmt.Sprintf("The example applications' own suites, run whole by "+
		"their frameworks' runners: examples/laravel (108 tables, views, routines, feature tests over HTTP, ids hard-coded "+
		"in tests) with PHPUnit serially and its paratest-compatible runner on parallel processes, and examples/django's "+
		"test classes written with Django's own test cases (TestCase, TransactionTestCase, serialized_rollback) with "+
		"`manage.py test` and `--parallel`. testdbd's variants lease databases of the template built once by the "+
		"example's migrations; the others are each framework's own way on a server of their own, tmpfs-backed with "+
		"testdbd's settings or disk-backed with the defaults: Laravel's RefreshDatabase (a transaction rolled back per "+
		"test, `migrate:fresh` once per process) and DatabaseTruncation (as Laravel 10 has it: `migrate:fresh` once, then "+
		"every table truncated and the seeders run before each test), Django's test database with a clone per worker. "+
		"Wall time of the whole command, median of %s; failed: the tests that failed in any run.", count(p.Reps, "run")))
	for fw, why := range r.Skipped {
		rep.para("%s: %s.", fw, why)
	}
	var rows [][]string
	var notes []string
	for _, v := range frameworkVariants {
		for _, w := range p.Workers {
			wall, tests, failed := frameworkMedian(r, v.id, w)
			if tests == 0 {
				continue
			}
			rows = append(rows, []string{v.framework, v.label, strconv.Itoa(w), fmtSec(wall), strconv.Itoa(tests),
				strconv.Itoa(len(failed))})
			if len(failed) > 0 {
				notes = append(notes, fmt.Sprintf("Failed under %s %s on %s: %s.", v.framework, v.label, count(w, "process"),
					shortNames(failed)))
			}
		}
	}
	rep.table([]string{"suite", "clean databases by", "processes", "wall s", "tests", "failed"}, rows)
	for _, n := range notes {
		rep.para("%s", n)
	}
	for _, w := range p.Workers {
		ours, _, _ := frameworkMedian(r, "laravel/testdbd", w)
		if base, _, _ := frameworkMedian(r, "laravel/truncation-disk", w); ours > 0 && base > 0 {
			rep.bullet("Laravel suite on %s: testdbd %s s, %s faster than DatabaseTruncation on a disk server (%s s).",
				count(w, "process"), fmtSec(ours), fmtX(base/ours), fmtSec(base))
		}
		ours, _, _ = frameworkMedian(r, "django/testdbd", w)
		if base, _, _ := frameworkMedian(r, "django/own-tmpfs", w); ours > 0 && base > 0 {
			rep.bullet("Django suite on %s: testdbd %s s against %s s for Django's own runner on a tmpfs server (%s).",
				count(w, "process"), fmtSec(ours), fmtSec(base), fmtX(base/ours))
		}
	}
}

// shortNames lists tests by class and method ("UserApiTest::test_x",
// "SeedTests.test_x").
func shortNames(tests []string) string {
	short := make([]string, len(tests))
	for i, f := range tests {
		if j := strings.LastIndex(f, "::"); j >= 0 {
			short[i] = f[strings.LastIndex(f[:j], `\`)+1:]
			continue
		}
		parts := strings.Split(f, ".")
		short[i] = strings.Join(parts[max(0, len(parts)-2):], ".")
	}
	return strings.Join(short, ", ")
}
