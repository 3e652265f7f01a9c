package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd/instance/native"
)

// TestQuickRun runs `bench --quick` end to end, as a process built without
// the race detector (it builds the daemon the same way): every phase, with
// real servers, so that the benchmark never rots. Then it checks the
// results and that `bench report` recomputes exactly the report the run
// wrote.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers and daemons for about two minutes")
	}
	if _, err := native.FindBinary(""); err != nil {
		t.Skipf("no native MariaDB or MySQL server to measure (make deps installs one): %v", err)
	}
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench")
	if out, err := exec.Command("go", "build", "-o", bench, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bench, "--quick", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("bench --quick took %s", time.Since(start).Round(time.Second))
	if testing.Verbose() || err != nil {
		t.Logf("progress:\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("bench --quick: %v", err)
	}

	r, err := readResults(filepath.Join(out, jsonFile))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Quick || len(r.Phases) != len(phases) {
		t.Errorf("quick %v, %d phases recorded, want %d", r.Quick, len(r.Phases), len(phases))
	}
	for _, rec := range r.Phases {
		if rec.Error != "" {
			t.Errorf("phase %s failed: %s", rec.Name, rec.Error)
		}
		checkSamples(t, rec.Name, rec.Results)
		if rec.Name == enginesPhase.Name {
			checkEngines(t, rec.Results)
		}
		if rec.Name == frameworksPhase.Name {
			checkFrameworks(t, rec.Results)
		}
	}

	// The report is a function of the raw samples alone.
	md, err := os.ReadFile(filepath.Join(out, mdFile))
	if err != nil {
		t.Fatal(err)
	}
	printed, err := exec.Command(bench, "report", filepath.Join(out, jsonFile)).Output()
	if err != nil {
		t.Fatalf("bench report: %v", err)
	}
	if !bytes.Equal(printed, md) {
		t.Errorf("bench report printed a different report than the run wrote")
	}
	for _, want := range []string{"## Headline", "| testdbd snapshot |", "## Engines", "## Machine"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if bytes.Contains(md, []byte("| – |")) {
		t.Errorf("report has a figure missing:\n%s", md)
	}

	// Nothing of the run is left: the run warns about server processes,
	// mounts and containers it left.
	if strings.Contains(stderr.String(), "warning:") {
		t.Errorf("the run warned:\n%s", stderr.String())
	}
}

// checkSamples fails the test for every empty sample series in a phase's
// results ("ms" lists, wherever they are) and for none at all.
func checkSamples(t *testing.T, phase string, raw json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("phase %s: %v", phase, err)
	}
	series := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "ms" {
					series++
					if xs, _ := x.([]any); len(xs) == 0 {
						t.Errorf("phase %s: no samples in %s", phase, path)
					}
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	walk(phase, v)
	if series == 0 && phase != suitePhase.Name && phase != coldPhase.Name && phase != enginesPhase.Name && phase != frameworksPhase.Name {
		t.Errorf("phase %s: no sample series", phase)
	}
}

// checkFrameworks: each framework's suite ran under testdbd with every
// test passing, or was skipped saying why.
func checkFrameworks(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var r frameworksResults
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	for fw := range frameworkTools {
		if why := r.Skipped[fw]; why != "" {
			t.Logf("%s: %s", fw, why)
			continue
		}
		ran := false
		for _, run := range r.Runs {
			if run.Variant == fw+"/testdbd" {
				ran = true
				if run.Tests == 0 || len(run.Failed) > 0 {
					t.Errorf("%s under testdbd on %d processes: %d tests, failed %v", fw, run.Workers, run.Tests, run.Failed)
				}
			}
		}
		if !ran {
			t.Errorf("%s: its suite did not run under testdbd, and no reason was given", fw)
		}
	}
}

// checkEngines: every engine was measured, with every variant, or skipped
// saying why.
func checkEngines(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var r enginesResults
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Engines) != len(dockerEngines) {
		t.Errorf("%d engines in the results, want %d", len(r.Engines), len(dockerEngines))
	}
	for _, e := range r.Engines {
		switch {
		case e.Skipped != "":
			t.Logf("engine %s skipped: %s", e.ID, e.Skipped)
		case len(e.Resets) != 1+len(strategies) || e.Version == "":
			t.Errorf("engine %s: version %q, %d series", e.ID, e.Version, len(e.Resets))
		}
	}
}

// TestReportOfNothing: every phase's report copes with a plan and no
// results (a phase that failed at once).
func TestReportOfNothing(t *testing.T) {
	for _, quick := range []bool{false, true} {
		r := &Results{Format: formatVersion, Quick: quick, Started: "2026-01-01T00:00:00Z"}
		for _, ph := range phases {
			plan, err := json.Marshal(ph.plan(quick))
			if err != nil {
				t.Fatal(err)
			}
			r.Phases = append(r.Phases, PhaseRecord{Name: ph.name(), Plan: plan, Results: json.RawMessage("{}"), Error: "failed"})
		}
		md, err := renderMarkdown(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(md, fmt.Sprintf("%d phase(s) failed", len(phases))) {
			t.Errorf("the report does not say the phases failed:\n%s", md)
		}
	}
}

// TestWriteResults: the results file keeps each series on one line and
// reads back as it was.
func TestWriteResults(t *testing.T) {
	rs, _ := json.Marshal(resetResults{Resets: []Series{{Name: "a", Ms: []float64{1.5, 2, 3}}, {Name: "b", Ms: []float64{4}}}})
	in := &Results{Format: formatVersion, Command: "bench", Machine: Machine{Cores: 2},
		Phases: []PhaseRecord{{Name: "reset", Plan: json.RawMessage(`{"batches":1}`), Results: rs}}}
	path := filepath.Join(t.TempDir(), jsonFile)
	if err := writeResults(path, in); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(`{"name":"a","ms":[1.5,2,3]}`)) || !bytes.Contains(b, []byte(`"plan": {"batches":1}`)) {
		t.Errorf("not one series a line:\n%s", b)
	}
	out, err := readResults(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(in)
	c, _ := json.Marshal(out)
	if !bytes.Equal(a, c) {
		t.Errorf("read back\n%s\nwrote\n%s", c, a)
	}
}

// TestCommittedReport: the committed docs/benchmarks.md is what the
// report computes from the committed raw samples, so that nobody edits a
// figure by hand.
func TestCommittedReport(t *testing.T) {
	data := filepath.Join("..", "docs", jsonFile)
	if _, err := os.Stat(data); os.IsNotExist(err) {
		t.Skip("no committed benchmark results")
	}
	want, err := reportOf(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "docs", mdFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("docs/%s is not what `go run . report -w ../docs/%s` computes from the raw samples: rerun it", mdFile, jsonFile)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {10, 1}, {1, 1}, {51, 6}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("p%g = %g, want %g", c.p, got, c.want)
		}
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("percentile of nothing is not NaN")
	}
}

func TestBatchOrder(t *testing.T) {
	vs := []string{"a", "b", "c", "d"}
	first := map[string]int{}
	for b := range 8 {
		order := batchOrder(vs, b)
		seen := map[string]bool{}
		for _, v := range order {
			seen[v] = true
		}
		if len(seen) != len(vs) {
			t.Fatalf("batch %d: %v is not a permutation", b, order)
		}
		first[order[0]]++
	}
	if len(first) != len(vs) {
		t.Errorf("not every variant goes first: %v", first)
	}
}

// TestParseSuiteOutput reads the counts and failed tests of PHPUnit (also
// through the Laravel example's parallel runner) and of Django's runner.
func TestParseSuiteOutput(t *testing.T) {
	for _, c := range []struct {
		out    string
		tests  int
		failed []string
	}{
		{"....\n\nOK (4 tests, 9 assertions)\n", 4, nil},
		{"[worker 1] OK (10 tests, 30 assertions)\n[worker 2] There was 1 failure:\n\n[worker 2] 1) Tests\\Feature\\UserApiTest::test_shows_user_3\n" +
			"[worker 2] Tests: 12, Assertions: 34, Failures: 1.\nparatest.php: 22 tests in 2 processes\n",
			22, []string{"Tests\\Feature\\UserApiTest::test_shows_user_3"}},
		{"======\nFAIL: test_seeded (blog.tests.SeedTests.test_seeded)\n----\nERROR: test_x (blog.tests.A.test_x)\n\nRan 7 tests in 0.512s\n\nFAILED (failures=1, errors=1)\n",
			7, []string{"blog.tests.A.test_x", "blog.tests.SeedTests.test_seeded"}},
		{"Traceback (most recent call last):\nImportError: no module\n", 0, nil},
	} {
		tests, failed := parseSuiteOutput(c.out)
		if tests != c.tests || !slices.Equal(failed, c.failed) {
			t.Errorf("parseSuiteOutput(%q) = %d, %q; want %d, %q", c.out, tests, failed, c.tests, c.failed)
		}
	}
}
