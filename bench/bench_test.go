package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/internal/testenv"
)

// needServer skips the test, saying why, in -short mode, and fails it
// where the native server's binary is missing.
func needServer(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	if _, err := native.FindBinary(""); err != nil {
		t.Fatalf("%v\n(make test installs it)", err)
	}
}

// goBuild builds package pkg (a path from this directory) into dir/name,
// without the race detector, and returns the binary's path.
func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// TestQuickRun runs `bench --quick` end to end, as a process built without
// the race detector, against a daemon binary built the same way: every
// phase, with real servers, so that the benchmark never rots. Then it checks
// that `bench report` recomputes exactly the report the run wrote.
func TestQuickRun(t *testing.T) {
	needServer(t, "starts real servers and daemons for about a minute")
	dir := t.TempDir()
	bench, daemon := goBuild(t, dir, "bench", "."), goBuild(t, dir, "testdbd", "../cmd/testdbd")
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	args := []string{"--quick", "--testdbd", daemon, "--out", out}
	if ok, reason := testenv.DockerAvailable(); !ok {
		t.Logf("the engines phase is left out: %s", reason)
		args = append(args, "--engines", "none")
	}
	cmd := exec.CommandContext(ctx, bench, args...)
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
	for _, f := range r.Failures {
		t.Errorf("phase %s failed: %s", f.Phase, f.Error)
	}
	for _, v := range variantOrder {
		if s := resetSummary(r.Resets, v); s.N == 0 || math.IsNaN(s.P50) {
			t.Errorf("no reset samples of %s", v)
		}
	}
	for _, v := range strategyVariants {
		for _, n := range []int{r.Plan.Tables, r.Plan.BigTables} {
			if resetSummary(r.Scale, v+"@"+strconv.Itoa(n)).N == 0 {
				t.Errorf("no scale samples of %s at %d tables", v, n)
			}
			// The least a reset does: REST, the read (which found the
			// tables), the restore and, for truncate only, the
			// statistics, each timed.
			for _, s := range r.Scale {
				if s.Variant != essentialsOf[v]+"@"+strconv.Itoa(n) {
					continue
				}
				if len(s.PhasesMs) != 5 || slices.ContainsFunc(s.PhasesMs[:4], func(x float64) bool { return !(x > 0) }) ||
					(s.PhasesMs[4] > 0) != (v == vTruncate) {
					t.Errorf("%s: parts %v", s.Variant, s.PhasesMs)
				}
			}
			if resetSummary(r.Scale, essentialsOf[v]+"@"+strconv.Itoa(n)).N == 0 {
				t.Errorf("no samples of %s at %d tables", essentialsOf[v], n)
			}
		}
		if full, _ := throughputRates(r.Throughput, v); len(full) == 0 || full[0] <= 0 {
			t.Errorf("no throughput of %s: %v", v, full)
		}
	}
	for _, c := range r.Plan.AcquireLevels {
		if n := acquireSummary(r.Acquires, c, false).N; n == 0 || acquireSummary(r.Acquires, c, true).N != n {
			t.Errorf("%d acquire samples with %d clients, and %d GET /healthz beside them", n, c, acquireSummary(r.Acquires, c, true).N)
		}
	}
	if want := 5 * len(r.Plan.SuiteWorkers) * r.Plan.SuiteReps; len(r.Suite) != want {
		t.Errorf("%d suite runs, want %d", len(r.Suite), want)
	}
	if len(r.ColdStarts) != 1+r.Plan.Restarts || r.ColdStarts[0].RSSEmptyBytes == 0 {
		t.Errorf("cold starts: %+v", r.ColdStarts)
	}
	for _, v := range strategyVariants {
		if concurrentOf(r.Concurrent, "together", v).N != r.Plan.ConcurrentPerStrategy*r.Plan.ConcurrentRounds ||
			concurrentOf(r.Concurrent, "alone", v).N != r.Plan.ConcurrentRounds {
			t.Errorf("concurrent samples of %s: %d together, %d alone", v, concurrentOf(r.Concurrent, "together", v).N,
				concurrentOf(r.Concurrent, "alone", v).N)
		}
	}
	// CPU time was read for the processes it is reported for (windows long
	// enough to span several of the kernel's 10 ms ticks).
	for _, v := range []string{vLaravelTmpfs, vTruncate} {
		if server, _, _ := resetCPU(r.Resets, v); !(server > 0) {
			t.Errorf("no server CPU time for the resets of %s: %v", v, server)
		}
	}
	// The floors' too: each floor's few samples in a quick run may take
	// less than one tick, so the server's CPU time over all of them (tests
	// and restores) must show.
	var floors float64
	for _, v := range strategyVariants {
		if server, daemon, bench, floor := cleanCPU(r, v); !(server > 0 && daemon > 0 && bench > 0) {
			t.Errorf("CPU time per clean database of %s: server %v, daemon %v, workers %v", v, server, daemon, bench)
		} else if floor > 0 {
			floors += floor
		}
	}
	if !(floors > 0) {
		t.Error("no server CPU time for any floor's tests and restores")
	}
	// Each strategy's least loop ran beside it, with no error, and its CPU
	// time was read.
	for _, v := range strategyVariants {
		full, _ := throughputRates(r.Throughput, loopOf[v])
		if len(full) != r.Plan.ThroughputReps || !(median(full) > 0) {
			t.Errorf("least loop of %s: rates %v, want %d runs", v, full, r.Plan.ThroughputReps)
		}
		if server, _, bench, _ := cleanCPU(r, loopOf[v]); !(server > 0 && bench > 0) {
			t.Errorf("CPU time per clean database of %s: server %v, workers %v", loopOf[v], server, bench)
		}
	}
	for _, tr := range r.Throughput {
		if tr.Errors > 0 {
			t.Errorf("throughput run of %s: %d errors", tr.Strategy, tr.Errors)
		}
	}
	if len(r.ConcurrentCPU) != 2 || r.ConcurrentCPU[1].Mode != "together" || !(r.ConcurrentCPU[1].ServerCPUMs > 0 && r.ConcurrentCPU[1].DaemonCPUMs > 0) {
		t.Errorf("CPU time of the concurrent phase: %+v", r.ConcurrentCPU)
	}
	// Every engine: each variant, its floor and its essentials, on the
	// engine's own server, with the daemon's phases read back.
	for _, e := range r.Plan.Engines {
		for _, v := range leaseVariants {
			for _, name := range []string{v, floorOf[v], essentialsOf[v]} {
				if resetSummary(r.EngineResets, name+"@"+e.ID).N == 0 {
					t.Errorf("no samples of %s on %s", name, e.ID)
				}
			}
		}
		if i := slices.IndexFunc(r.EngineServers, func(s EngineServer) bool { return s.ID == e.ID }); i < 0 || r.EngineServers[i].Version == "" {
			t.Errorf("engine servers %+v: none of %s", r.EngineServers, e.ID)
		}
	}
	if len(r.Cache) != 1+r.Plan.CacheRestores || r.Cache[0].Source != "migrations" || r.Cache[1].Source != "cache" ||
		r.Cache[1].Build.MigrateMs != 0 || r.Cache[1].Tables != r.Cache[0].Tables {
		t.Errorf("template cache runs: %+v", r.Cache)
	}
	if len(r.Servers) < 3 || r.Servers[0].OnTmpfs || !r.Servers[1].OnTmpfs {
		t.Errorf("servers: %+v", r.Servers)
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
	for _, want := range []string{"## The targets", "| laravel-truncate/disk |", chartFile} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(out, chartFile)); err != nil || !bytes.HasPrefix(svg, []byte("<svg")) {
		t.Errorf("chart: %v %.40q", err, svg)
	}

	// Nothing of the run is left: the run warns about server processes and
	// mounts it left; no daemon of the run still runs.
	if strings.Contains(stderr.String(), "warning:") {
		t.Errorf("the run warned:\n%s", stderr.String())
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(daemon)) {
			t.Errorf("a daemon of the run still runs: %s", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// TestCommittedReportIsCurrent checks that the committed docs/benchmarks.md
// and chart are what the report command computes from the committed raw
// samples, so that nobody edits a number by hand.
func TestCommittedReportIsCurrent(t *testing.T) {
	data := filepath.Join("..", "docs", jsonFile)
	if _, err := os.Stat(data); os.IsNotExist(err) {
		t.Skip("no committed benchmark results")
	}
	r, err := readResults(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{mdFile: renderMarkdown(r), chartFile: renderChart(r)} {
		got, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("docs/%s is not what `go run ./cmd/bench report -w docs/%s` computes from the raw samples: rerun it (or make bench)", name, jsonFile)
		}
	}
	if r.Plan.Quick {
		t.Errorf("docs/%s holds a quick run; publish a full one (make bench)", jsonFile)
	}

	// The README quotes the report's headline: every quoted line must be a
	// line of the report, so that its numbers are the command's.
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "<!-- quoted from docs/benchmarks.md -->", "<!-- end of quote -->"
	_, quote, ok := strings.Cut(string(readme), open)
	quote, _, ok2 := strings.Cut(quote, end)
	if !ok || !ok2 {
		t.Fatalf("README.md lacks the quote of docs/benchmarks.md between %q and %q", open, end)
	}
	md := renderMarkdown(r)
	lines := 0
	for _, line := range strings.Split(quote, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		lines++
		if !strings.Contains(md, "\n"+line+"\n") {
			t.Errorf("README.md quotes a line that is not in docs/benchmarks.md (copy the headline again): %s", line)
		}
	}
	if lines == 0 {
		t.Error("README.md quotes nothing of docs/benchmarks.md")
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {10, 1}, {1, 1}, {51, 6}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("p%g = %g, want %g", c.p, got, c.want)
		}
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("percentile of nothing is not NaN")
	}
	s := summarize([]float64{1, 2, 3, 10, 20, 30}, []int{0, 0, 0, 1, 1, 1})
	if s.Batches != 2 || s.BatchMedian != 2 || s.BatchMax != 20 {
		t.Errorf("batch medians: %+v", s)
	}
}

func TestBatchOrder(t *testing.T) {
	vs := []string{"a", "b", "c", "d"}
	first := map[string]int{}
	for b := 0; b < 8; b++ {
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

func TestReportIsDeterministic(t *testing.T) {
	r := &Results{Format: formatVersion, Plan: quickPlan()}
	for i, v := range variantOrder {
		for b := 0; b < 3; b++ {
			r.Resets = append(r.Resets, ResetSample{Variant: v, Batch: b, ClientMs: float64(i+1) * float64(b+1)})
		}
	}
	md1, md2, svg1, svg2 := renderMarkdown(r), renderMarkdown(r), renderChart(r), renderChart(r)
	if md1 != md2 || svg1 != svg2 {
		t.Error("the same results give different reports")
	}
	if !strings.Contains(renderChart(r), "testdbd snapshot") {
		t.Error("the chart lacks a variant")
	}
	// Samples without the essentials' parts measure no least: no bar is
	// said to be out of reach.
	if strings.Contains(md1, "so it cannot be met") {
		t.Error("a bar is said to be out of reach without the measurement")
	}
}

// TestLeastNote: a bar is said to be out of reach only when it is missed
// and the least measured beside it is already over it.
func TestLeastNote(t *testing.T) {
	for _, c := range []struct {
		least, bar float64
		met, out   bool
		note       bool
	}{
		{least: 1.5, bar: 1.3, met: false, out: true, note: true},
		{least: 1.2, bar: 1.3, met: false, out: false, note: true},
		{least: 1.5, bar: 1.3, met: true, out: false, note: true}, // noise: the bar was met anyway
		{least: math.NaN(), bar: 1.3, met: false, out: false, note: false},
		{least: math.Inf(1), bar: 1.3, met: false, out: false, note: false},
	} {
		got := leastNote(c.least, c.bar, c.met, "x")
		if strings.Contains(got, "so it cannot be met") != c.out || (got != "") != c.note {
			t.Errorf("leastNote(%v, %v, %v) = %q", c.least, c.bar, c.met, got)
		}
	}
}

// TestCPUMs checks the reading of a process's CPU time: it grows with work
// done, and a process that cannot be read counts nothing.
func TestCPUMs(t *testing.T) {
	before := cpuMs(os.Getpid())
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
	}
	if after := cpuMs(os.Getpid()); !(after >= before+50) {
		t.Errorf("100 ms of spinning moved the CPU time from %v to %v ms", before, after)
	}
	if self := selfCPUMs(); !(self > 50) {
		t.Errorf("own CPU time %v ms after spinning", self)
	}
	if got := cpuMs(0); got != 0 {
		t.Errorf("cpuMs(0) = %v", got)
	}
	if got := cpuMs(1 << 30); got != 0 {
		t.Errorf("cpuMs of no process = %v", got)
	}
}

// TestContentionLeast: a reset that keeps s cores busy alone slows down by
// leases × s / cores when the concurrent phase's leases share the cores,
// and not at all while they leave cores idle.
func TestContentionLeast(t *testing.T) {
	r := &Results{Plan: Plan{ConcurrentPerStrategy: 4}, Machine: Machine{Cores: 2}}
	for _, c := range []struct{ share, want float64 }{{1, 6}, {0.9, 5.4}, {0.1, 1}, {0, 1}} {
		if got := contentionLeast(r, c.share); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("share %g: %g, want %g", c.share, got, c.want)
		}
	}
}
