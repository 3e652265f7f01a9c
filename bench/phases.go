package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/internal/workload"
	"github.com/testdbd/testdbd/migrations"
)

// bench is one run: what it measures, what it started (to stop it however
// the run ends), and the results.
type bench struct {
	plan    Plan
	bin     string // the daemon binary
	diskDir string
	log     io.Writer
	start   time.Time
	res     *Results

	tmp       string // binaries, state directories
	pristine  string // initialized datadirs shared by every server of the run
	mu        sync.Mutex
	daemons   []*daemon
	baselines []*baseServer
	startPIDs map[int]bool // servers running before the run (not ours)
}

// The main template, the standard workload at plan.Tables.
const mainTemplate = "std"

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

func (b *bench) run(ctx context.Context) error {
	var err error
	if b.tmp, err = os.MkdirTemp("", "tdbb"); err != nil {
		return err
	}
	b.startPIDs = serverPIDs()
	b.res.Machine = readMachine()
	b.res.Machine.OtherServers = len(b.startPIDs)
	b.res.Machine.DiskPath = b.diskDir
	if onTmpfs, err := native.IsTmpfs(b.diskDir); err != nil {
		return fmt.Errorf("--disk-dir %s: %w", b.diskDir, err)
	} else if onTmpfs {
		return fmt.Errorf("--disk-dir %s is on tmpfs: the disk-backed baseline needs a directory on disk", b.diskDir)
	}
	if b.res.Machine.DiskFsyncMs, err = fsyncCost(b.diskDir, 64); err != nil {
		return err
	}
	if b.res.Machine.TmpfsFsyncMs, err = fsyncCost("/dev/shm", 64); err != nil {
		return err
	}
	b.res.Machine.DiskFsyncCount = 64
	if err := b.prepareBinary(ctx); err != nil {
		return err
	}
	bin, err := native.FindBinary("")
	if err != nil {
		return err
	}
	engine, err := native.DetectEngine(ctx, bin)
	if err != nil {
		return err
	}
	b.res.Machine.Server = engine.String()
	b.progress("machine: %s, %d cores, %.1f GiB, kernel %s, %s; disk fsync %.3f ms, tmpfs %.3f ms",
		b.res.Machine.CPU, b.res.Machine.Cores, float64(b.res.Machine.MemoryBytes)/(1<<30),
		b.res.Machine.Kernel, engine, b.res.Machine.DiskFsyncMs, b.res.Machine.TmpfsFsyncMs)

	// A phase that fails is recorded and the run goes on, so that one
	// failure (a daemon that stops handing out databases, say) does not hide
	// the rest; the report says what could not be measured and why.
	failed := func(phase string, err error) bool {
		if err == nil || ctx.Err() != nil {
			return err != nil
		}
		b.res.Failures = append(b.res.Failures, Failure{Phase: phase, Error: err.Error()})
		b.progress("%s FAILED: %v; going on with the other phases", phase, err)
		return true
	}
	failed(phaseCold, b.coldStarts(ctx))

	resetD, disk, tmpfs, err := b.setup(ctx)
	if err != nil {
		failed(phaseReset, fmt.Errorf("setup: %w", err))
		failed(phaseSuite, fmt.Errorf("setup: %w", err))
	} else {
		failed(phaseReset, b.resetPhase(ctx, resetD, disk, tmpfs))
		failed(phaseSuite, b.suitePhase(ctx, resetD, disk, tmpfs))
		b.saveStats(ctx, "reset", resetD)
	}
	b.stopDaemon(resetD)
	disk.close()
	tmpfs.close()

	pool, err := b.poolDaemon(ctx, "pool", b.plan.PoolSize)
	if !failed(phaseAcquire, err) && failed(phaseAcquire, b.acquirePhase(ctx, pool)) {
		// The daemon may be wedged; throughput gets a fresh one.
		b.stopDaemon(pool)
		pool, err = b.poolDaemon(ctx, "pool", b.plan.PoolSize)
	}
	if !failed(phaseThroughput, err) {
		failed(phaseThroughput, b.throughputPhase(ctx, pool))
		b.saveStats(ctx, "pool", pool)
	}
	b.stopDaemon(pool)
	failed(phaseConcurrent, b.concurrentPhase(ctx))
	failed(phaseScale, b.scalePhase(ctx))
	b.enginesPhase(ctx, failed)
	failed(phaseBigRows, b.bigRowsPhase(ctx))
	failed(phaseCache, b.cachePhase(ctx))
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	b.res.Machine.LoadEnd = loadAvg()
	b.res.Seconds = math.Round(time.Since(b.start).Seconds()*10) / 10
	return nil
}

// The phases, as failures name them.
const (
	phaseCold       = "cold start"
	phaseReset      = "reset latency"
	phaseSuite      = "suite"
	phaseAcquire    = "acquire latency"
	phaseThroughput = "throughput"
	phaseScale      = "scale"
	phaseBigRows    = "big tables"
	phaseCache      = "template cache"
	phaseConcurrent = "concurrent"
	phaseEngines    = "engines"
)

// saveStats keeps a daemon's GET /v1/stats.
func (b *bench) saveStats(ctx context.Context, name string, d *daemon) {
	st, err := d.stats(ctx)
	if err != nil {
		b.progress("warning: stats of daemon %q: %v", name, err)
		return
	}
	if b.res.DaemonStats == nil {
		b.res.DaemonStats = map[string]json.RawMessage{}
	}
	b.res.DaemonStats[name] = st
}

// prepareBinary builds the daemon unless one was given, and records its
// version.
func (b *bench) prepareBinary(ctx context.Context) error {
	if b.bin == "" {
		b.bin = filepath.Join(b.tmp, "testdbd")
		version := "bench"
		if out, err := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty").Output(); err == nil {
			version = strings.TrimSpace(string(out))
		}
		b.progress("building the daemon (go build ./cmd/testdbd)")
		cmd := exec.CommandContext(ctx, "go", "build", "-C", "..", "-ldflags", "-X github.com/testdbd/testdbd.Version="+version,
			"-o", b.bin, "./cmd/testdbd")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/testdbd (run the benchmark from the module root, or pass --testdbd): %w\n%s", err, out)
		}
	}
	out, err := exec.CommandContext(ctx, b.bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w", b.bin, err)
	}
	b.res.Machine.Testdbd = strings.TrimSpace(string(out))
	return nil
}

// newStateDir makes a short state directory (Unix socket paths must stay
// under 108 bytes) holding a copy of the run's initialized datadirs, so
// that only the first cold start pays for the initialization.
func (b *bench) newStateDir() (string, error) {
	dir, err := os.MkdirTemp(b.tmp, "s")
	if err != nil {
		return "", err
	}
	if b.pristine != "" {
		if err := copyDir(b.pristine, filepath.Join(dir, "pristine")); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (b *bench) startDaemon(ctx context.Context, name string, args ...string) (*daemon, error) {
	state, err := b.newStateDir()
	if err != nil {
		return nil, err
	}
	d, err := startDaemon(ctx, b.bin, name, state, args...)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.daemons = append(b.daemons, d)
	b.mu.Unlock()
	return d, nil
}

func (b *bench) stopDaemon(d *daemon) {
	if d == nil {
		return
	}
	if err := d.stop(); err != nil {
		b.progress("warning: %v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.daemons {
		if x == d {
			b.daemons = append(b.daemons[:i], b.daemons[i+1:]...)
			break
		}
	}
}

// cleanup stops whatever still runs, removes the run's files and checks
// that no server of the run is left.
func (b *bench) cleanup() {
	b.mu.Lock()
	daemons := append([]*daemon(nil), b.daemons...)
	baselines := b.baselines
	b.mu.Unlock()
	for _, d := range daemons {
		b.stopDaemon(d)
	}
	for _, s := range baselines {
		s.close()
	}
	if b.tmp != "" {
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		for _, line := range strings.Split(string(mounts), "\n") {
			if strings.Contains(line, " "+b.tmp+"/") {
				b.progress("warning: a mount of the run is left: %s", line)
			}
		}
		_ = os.RemoveAll(b.tmp)
	}
	owned := []string{b.tmp}
	for _, s := range baselines {
		if s.diskRoot != "" {
			owned = append(owned, s.diskRoot)
		}
	}
	if len(b.plan.Engines) > 0 && b.tmp != "" { // the engines phase's daemons serve containers
		b.removeContainers()
	}
	for pid := range serverPIDs() {
		cmdline := readFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for _, path := range owned {
			if path != "" && strings.Contains(cmdline, path+"/") {
				b.progress("warning: server process %d of the run is still running", pid)
			}
		}
	}
}

// removeContainers removes the containers of the run's daemons that are
// left (a daemon that was killed leaves its containers behind), saying so.
func (b *bench) removeContainers() {
	out, err := exec.Command("docker", "ps", "-a", "--format", `{{.ID}} {{.Label "`+docker.LabelStateDir+`"}}`).Output()
	if err != nil {
		b.progress("warning: docker ps: %v; containers of the run may be left (label %s under %s)", err, docker.LabelStateDir, b.tmp)
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, dir, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(dir, b.tmp+"/") {
			continue
		}
		b.progress("warning: container %s of the run was left (state directory %s); removing it", id, dir)
		if out, err := exec.Command("docker", "rm", "-f", "-v", id).CombinedOutput(); err != nil {
			b.progress("warning: docker rm %s: %v: %s", id, err, out)
		}
	}
}

// coldStarts: daemon start → template of plan.Tables built → ColdReady
// worker databases ready, first on an empty state directory (which
// initializes a datadir), then reusing it.
func (b *bench) coldStarts(ctx context.Context) error {
	state, err := os.MkdirTemp(b.tmp, "s")
	if err != nil {
		return err
	}
	for run := 0; run <= b.plan.Restarts; run++ {
		kind := "restart"
		if run == 0 {
			kind = "first"
		}
		c, err := b.coldStart(ctx, kind, run, state)
		if err != nil {
			return err
		}
		b.res.ColdStarts = append(b.res.ColdStarts, c)
		b.progress("cold start (%s): serving %.0f ms, template built %.0f ms, %d ready %.0f ms, server RSS %.0f MB empty / %.0f MB with the pool",
			kind, c.ServingMs, c.TemplateMs, c.Ready, c.ReadyMs, float64(c.RSSEmptyBytes)/1e6, float64(c.RSSReadyBytes)/1e6)
	}
	// Later servers start from the datadir the first start initialized.
	b.pristine = filepath.Join(state, "pristine")
	return nil
}

func (b *bench) coldStart(ctx context.Context, kind string, run int, state string) (ColdStart, error) {
	n := strconv.Itoa(b.plan.ColdReady)
	c := ColdStart{Kind: kind, Run: run, Ready: b.plan.ColdReady}
	d, err := startDaemon(ctx, b.bin, "cold", state, "--warm", "1", "--max-instances", "1",
		"--pool-size", n, "--max-databases", n, "--max-databases-per-instance", n)
	if err != nil {
		return c, err
	}
	b.mu.Lock()
	b.daemons = append(b.daemons, d)
	b.mu.Unlock()
	defer b.stopDaemon(d)
	c.ServingMs = round3(ms(d.serving))
	insts, err := d.api.ListInstances(ctx)
	if err != nil {
		return c, err
	}
	if len(insts) != 1 {
		return c, fmt.Errorf("%d instances after --warm 1", len(insts))
	}
	c.RSSEmptyBytes, c.InstanceStartMs = insts[0].MemoryBytes, insts[0].StartupMs
	t, err := d.ensureTemplate(ctx, "cold", b.plan.Tables, b.plan.ColdReady)
	if err != nil {
		return c, err
	}
	c.TemplateMs, c.Build = round3(ms(time.Since(d.started))), t.Build
	if _, err := d.waitPool(ctx, "cold", 2*time.Minute, 5*time.Millisecond, func(t *client.Template) bool {
		return int(t.Pool.Ready) >= b.plan.ColdReady
	}); err != nil {
		return c, err
	}
	c.ReadyMs = round3(ms(time.Since(d.started)))
	time.Sleep(time.Second)
	if insts, err = d.api.ListInstances(ctx); err != nil {
		return c, err
	}
	c.RSSReadyBytes = insts[0].MemoryBytes
	stopStart := time.Now()
	if err := d.stop(); err != nil {
		return c, err
	}
	c.StopMs = round3(ms(time.Since(stopStart)))
	return c, nil
}

// setup starts the baseline servers and the daemon of the reset and suite
// phases (a pool of plan.ResetPool), all at once.
func (b *bench) setup(ctx context.Context) (d *daemon, disk, tmpfs *baseServer, err error) {
	b.progress("setup: disk and tmpfs baseline servers; a daemon, the %d-table template and a pool of %d", b.plan.Tables, b.plan.ResetPool)
	g, gctx := errgroup.WithContext(ctx)
	for _, onDisk := range []bool{true, false} {
		g.Go(func() error {
			s, err := startBaseline(gctx, onDisk, b.tmp, b.diskDir, b.pristine)
			if err != nil {
				return err
			}
			b.mu.Lock()
			b.baselines = append(b.baselines, s)
			b.mu.Unlock()
			if onDisk {
				disk = s
			} else {
				tmpfs = s
			}
			return nil
		})
	}
	g.Go(func() error {
		var err error
		d, err = b.poolDaemon(gctx, "reset", b.plan.ResetPool)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}
	for _, s := range []*baseServer{disk, tmpfs} {
		inf, err := s.info(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		if inf.OnTmpfs != (s == tmpfs) {
			return nil, nil, nil, fmt.Errorf("%s baseline: datadir %s on tmpfs is %v", s.name, inf.Datadir, inf.OnTmpfs)
		}
		b.res.Servers = append(b.res.Servers, inf)
	}
	insts, err := d.api.ListInstances(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, in := range insts {
		inf := ServerInfo{Name: "testdbd (" + in.ID + ")", OnTmpfs: in.DatadirOnTmpfs, Settings: map[string]string{"version": in.Version}}
		for _, s := range in.Settings {
			for _, want := range durabilitySettings {
				if s.Name == want {
					inf.Settings[s.Name] = s.Actual
				}
			}
		}
		b.res.Servers = append(b.res.Servers, inf)
	}
	return d, disk, tmpfs, nil
}

// poolDaemon starts a daemon whose one server holds the main template and
// a pool of exactly pool worker databases, and waits until they are ready.
func (b *bench) poolDaemon(ctx context.Context, name string, pool int) (*daemon, error) {
	return b.templateDaemon(ctx, name, mainTemplate, b.plan.Tables, pool)
}

// templateDaemon starts a daemon whose one server holds template (the
// standard workload of tables tables, plus the extra migration files) and a
// pool of exactly pool worker databases, records the build and waits until
// the databases are ready.
func (b *bench) templateDaemon(ctx context.Context, name, template string, tables, pool int, extra ...client.MigrationFile) (*daemon, error) {
	return b.templateDaemonWith(ctx, name, nil, template, tables, pool, extra...)
}

// templateDaemonWith is templateDaemon with more daemon flags (args).
func (b *bench) templateDaemonWith(ctx context.Context, name string, args []string, template string, tables, pool int, extra ...client.MigrationFile) (*daemon, error) {
	n := strconv.Itoa(pool)
	d, err := b.startDaemon(ctx, name, append([]string{"--warm", "1", "--max-instances", "1",
		"--pool-size", n, "--max-databases", n, "--max-databases-per-instance", n}, args...)...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	t, err := d.ensureTemplate(ctx, template, tables, pool, extra...)
	if err != nil {
		b.stopDaemon(d)
		return nil, err
	}
	tb := TemplateBuild{Daemon: name, Name: template, Tables: int(t.Tables), Pool: pool,
		ClientMs: round3(ms(time.Since(start))), Build: t.Build}
	b.mu.Lock()
	b.res.Templates = append(b.res.Templates, tb)
	b.mu.Unlock()
	if err := d.waitIdle(ctx, template, pool); err != nil {
		b.stopDaemon(d)
		return nil, err
	}
	b.progress("daemon %q: template built in %.0f ms (daemon: %.0f ms), %d databases ready after %.0f ms",
		name, tb.ClientMs, tb.Build.TotalMs, pool, ms(time.Since(start)))
	return d, nil
}

// resetPhase: every variant's test → reset, interleaved in batches.
func (b *bench) resetPhase(ctx context.Context, d *daemon, disk, tmpfs *baseServer) error {
	src := standardSource(b.plan.Tables)
	var vs []variant
	defer func() {
		for _, v := range vs {
			v.close()
		}
	}()
	add := func(v variant, err error) error {
		if err != nil {
			return err
		}
		vs = append(vs, v)
		return nil
	}
	if err := add(newLaravelVariant(ctx, vLaravelDisk, disk, "laravel", src)); err != nil {
		return err
	}
	if err := add(newLaravelVariant(ctx, vLaravelTmpfs, tmpfs, "laravel", src)); err != nil {
		return err
	}
	if err := add(newFreshVariant(ctx, vFreshDisk, disk, "fresh", src, b.plan.Tables)); err != nil {
		return err
	}
	if err := add(newFreshVariant(ctx, vFreshTmpfs, tmpfs, "fresh", src, b.plan.Tables)); err != nil {
		return err
	}
	for _, name := range leaseVariants {
		if err := add(newLeaseVariant(ctx, name, d, mainTemplate, "reset-"+name)); err != nil {
			return err
		}
	}
	floors, err := newFloorVariants(ctx, d, mainTemplate, "", leaseVariants, leaseVariants)
	if err != nil {
		return err
	}
	vs = append(vs, floors...)
	counts := func(v variant) (int, int) {
		if strings.HasPrefix(v.name(), "migrate-fresh") {
			return 0, b.plan.FreshPerBatch
		}
		return b.plan.Warmup, b.plan.PerBatch
	}
	samples, err := interleave(ctx, vs, b.plan.Batches, counts, func(batch int) {
		b.progress("reset latency: batch %d/%d (%d variants)", batch+1, b.plan.Batches, len(vs))
	})
	b.res.Resets = samples
	return err
}

// acquirePhase: acquire latency from a ready pool. Before each measured
// round the pool is idle (no reset or clone running) and holds at least as
// many ready databases as there are clients; the clients start together.
func (b *bench) acquirePhase(ctx context.Context, d *daemon) error {
	levels := b.plan.AcquireLevels
	total := b.plan.AcquireWarmup + b.plan.AcquireRounds
	for i := 0; i < total; i++ {
		round := i - b.plan.AcquireWarmup
		if round >= 0 && (round%5 == 0 || round == b.plan.AcquireRounds-1) {
			b.progress("acquire latency: round %d/%d (clients %v)", round+1, b.plan.AcquireRounds, levels)
		}
		// keep records a round's samples.
		keep := func(s []AcquireSample) {
			for j := range s {
				s[j].Round, s[j].Warmup = round, round < 0
			}
			b.res.Acquires = append(b.res.Acquires, s...)
		}
		for _, c := range batchOrder(levels, i) {
			bursts, clients := 1, c
			if c == 1 {
				bursts = b.plan.Singles
			}
			for k := 0; k < bursts; k++ {
				if err := d.waitIdle(ctx, mainTemplate, clients); err != nil {
					return err
				}
				s, err := b.acquireBurst(ctx, d, clients)
				if err != nil {
					return err
				}
				keep(s)
				// The floor: the cheapest call of the same API from as many
				// clients at once, next, once the pool is idle again (the
				// releases started resets).
				if err := d.waitIdle(ctx, mainTemplate, clients); err != nil {
					return err
				}
				h, err := healthBurst(ctx, d, clients)
				if err != nil {
					return err
				}
				keep(h)
			}
		}
	}
	return d.waitIdle(ctx, mainTemplate, b.plan.PoolSize)
}

// acquireBurst has n clients acquire at once, then releases every lease.
func (b *bench) acquireBurst(ctx context.Context, d *daemon, n int) ([]AcquireSample, error) {
	out := make([]AcquireSample, n)
	ids := make([]string, n)
	errs := make([]error, n)
	together(n, func(i int) {
		t0 := time.Now()
		l, err := d.acquire(ctx, mainTemplate, "STRATEGY_SNAPSHOT", "")
		out[i] = AcquireSample{Clients: n, ClientMs: round3(ms(time.Since(t0)))}
		if errs[i] = err; err == nil {
			out[i].WaitedMs, ids[i] = round3(l.WaitedMs), l.ID
		}
	})
	var wg sync.WaitGroup
	for i := range ids {
		if ids[i] == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.release(ctx, ids[i]); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// healthBurst has n clients call GET /healthz at once: the REST round
// trip's floor at that concurrency.
func healthBurst(ctx context.Context, d *daemon, n int) ([]AcquireSample, error) {
	out := make([]AcquireSample, n)
	errs := make([]error, n)
	together(n, func(i int) {
		t0 := time.Now()
		errs[i] = d.api.Health(ctx)
		out[i] = AcquireSample{Clients: n, Health: true, ClientMs: round3(ms(time.Since(t0)))}
	})
	return out, errors.Join(errs...)
}

// together runs f(0) … f(n-1), each in a goroutine of its own, started at
// once once all are ready, and waits for them.
func together(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

// throughputPhase: workers loop acquire → write → release; the released
// database is reset in the background by the lease's strategy. Beside
// each strategy's runs, interleaved with them, its least loop's (loop.go).
func (b *bench) throughputPhase(ctx context.Context, d *daemon) error {
	least, ok, err := newLeastLoop(ctx, d, mainTemplate)
	if err != nil {
		return err
	}
	if !ok {
		b.progress("throughput: the least loops are left out: the server is not MariaDB's")
	}
	var runs []string
	for _, s := range []string{vTruncate, vSnapshot, vRollback} {
		runs = append(runs, s)
		if ok {
			runs = append(runs, loopOf[s])
		}
	}
	for rep := 0; rep < b.plan.ThroughputReps; rep++ {
		for _, s := range batchOrder(runs, rep) {
			if err := d.waitIdle(ctx, mainTemplate, b.plan.PoolSize); err != nil {
				return err
			}
			var r ThroughputRun
			var err error
			if strategy, isLoop := loopStrategy(s); isLoop {
				r, err = b.leastRun(ctx, d, least, s, strategy)
			} else {
				r, err = b.throughputRun(ctx, d, s, func(ctx context.Context, w int) (handOutTimes, error) {
					return handOut(ctx, d, s, fmt.Sprintf("tp-%d", w))
				})
			}
			if err != nil {
				return err
			}
			r.Rep = rep
			b.res.Throughput = append(b.res.Throughput, r)
			b.progress("throughput: %s, %d workers: %d clean databases in %.0f s (%.0f/s)",
				s, r.Workers, r.Handed, r.Seconds, float64(r.Handed)/r.Seconds)
		}
	}
	return d.waitIdle(ctx, mainTemplate, b.plan.PoolSize)
}

// leastRun is one run of strategy's least loop (named run), on databases
// made for it and dropped after it.
func (b *bench) leastRun(ctx context.Context, d *daemon, least *leastLoop, run, strategy string) (ThroughputRun, error) {
	if err := least.open(ctx, b.plan.ThroughputWorkers); err != nil {
		return ThroughputRun{}, err
	}
	least.statsPutBack.Store(0)
	r, err := b.throughputRun(ctx, d, run, func(ctx context.Context, w int) (handOutTimes, error) {
		return least.handOut(ctx, strategy, w)
	})
	r.StatsPutBack = int(least.statsPutBack.Load())
	return r, errors.Join(err, least.close(context.WithoutCancel(ctx)))
}

// loopStrategy returns the strategy variant whose least loop run is.
func loopStrategy(run string) (string, bool) {
	for v, l := range loopOf {
		if l == run {
			return v, true
		}
	}
	return "", false
}

// throughputRun runs plan.ThroughputWorkers workers, each calling loop with
// its number until the run's time is up, and then waits until the daemon
// has recycled every database released in it: the CPU time counts to that
// point.
func (b *bench) throughputRun(ctx context.Context, d *daemon, strategy string, loop func(ctx context.Context, w int) (handOutTimes, error)) (ThroughputRun, error) {
	dur := time.Duration(b.plan.ThroughputSeconds * float64(time.Second))
	r := ThroughputRun{Strategy: strategy, Workers: b.plan.ThroughputWorkers, Seconds: b.plan.ThroughputSeconds,
		PerBucket: make([]int, int(math.Ceil(b.plan.ThroughputSeconds*10)))}
	var mu sync.Mutex
	var firstErr error
	var acquire, work, release []float64
	tpl, err := d.api.GetTemplate(ctx, mainTemplate)
	if err != nil {
		return r, err
	}
	cpu := procs{server: d.serverPID(ctx, tpl.InstanceID), daemon: d.pid()}.mark()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < r.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < dur && ctx.Err() == nil {
				h, err := loop(ctx, w)
				at := time.Since(start)
				mu.Lock()
				switch {
				case err != nil:
					r.Errors++
					if firstErr == nil {
						firstErr = err
					}
				case at < dur:
					r.Loops++
					r.Handed++
					r.PerBucket[int(at/(100*time.Millisecond))]++
					acquire, work, release = append(acquire, h.acquire), append(work, h.work), append(release, h.release)
					if h.waited {
						r.Waited++
					}
				default:
					r.Loops++
				}
				stop := r.Errors > 10
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	r.AcquireMs, r.WorkMs, r.ReleaseMs = round3(median(acquire)), round3(median(work)), round3(median(release))
	if r.Errors > 10 || ctx.Err() != nil {
		return r, fmt.Errorf("%d errors, the first: %w", r.Errors, firstErr)
	}
	// The released databases' recycling is part of their cost; polled
	// gently, so that the polls add little to it.
	if err := d.waitIdleEvery(ctx, mainTemplate, b.plan.PoolSize, 20*time.Millisecond); err != nil {
		return r, err
	}
	r.ServerCPUMs, r.DaemonCPUMs, r.BenchCPUMs = cpu.used()
	return r, nil
}

// handOutTimes is where one throughput loop spent its time, in ms.
type handOutTimes struct {
	acquire, work, release float64
	waited                 bool // the daemon had no ready database at once
}

// handOut is one loop of a throughput worker: acquire, connect with the
// lease's user, run the test, disconnect, release.
func handOut(ctx context.Context, d *daemon, strategy, worker string) (handOutTimes, error) {
	var h handOutTimes
	t0 := time.Now()
	l, err := d.acquire(ctx, mainTemplate, strategyName[strategy], worker)
	if err != nil {
		return h, err
	}
	t1 := time.Now()
	h.acquire, h.waited = ms(t1.Sub(t0)), l.WaitedMs > 0
	db, err := openLease(l)
	if err == nil {
		err = runTest(ctx, db, strategy == vRollback)
		db.Close()
	}
	t2 := time.Now()
	h.work = ms(t2.Sub(t1))
	if rerr := d.release(ctx, l.ID); err == nil {
		err = rerr
	}
	h.release = ms(time.Since(t2))
	return h, err
}

// suitePhase: the synthetic suite, SuiteTests tests split over W workers,
// for every variant and W, interleaved.
func (b *bench) suitePhase(ctx context.Context, d *daemon, disk, tmpfs *baseServer) error {
	type cell struct {
		variant string
		workers int
	}
	var cells []cell
	for _, v := range []string{vLaravelDisk, vLaravelTmpfs, vTruncate, vSnapshot, vRollback} {
		for _, w := range b.plan.SuiteWorkers {
			cells = append(cells, cell{v, w})
		}
	}
	src := standardSource(b.plan.Tables)
	for rep := 0; rep < b.plan.SuiteReps; rep++ {
		for _, c := range batchOrder(cells, rep) {
			if err := d.waitIdle(ctx, mainTemplate, b.plan.ResetPool); err != nil {
				return err
			}
			var r SuiteRun
			var err error
			switch c.variant {
			case vLaravelDisk:
				r, err = suiteLaravel(ctx, disk, src, c.workers, b.plan.SuiteTests)
			case vLaravelTmpfs:
				r, err = suiteLaravel(ctx, tmpfs, src, c.workers, b.plan.SuiteTests)
			default:
				r, err = suiteTestdbd(ctx, d, c.variant, c.workers, b.plan.SuiteTests)
			}
			if err != nil {
				return fmt.Errorf("%s with %d workers: %w", c.variant, c.workers, err)
			}
			r.Variant, r.Rep = c.variant, rep
			b.res.Suite = append(b.res.Suite, r)
			b.progress("suite %d/%d: %s, %d tests on %d workers: %.2f s", rep+1, b.plan.SuiteReps,
				c.variant, r.Tests, r.Workers, r.WallMs/1000)
		}
	}
	return nil
}

// runWorkers runs w workers and times them: setup returns how long the
// worker's own setup took.
func runWorkers(w int, worker func(i int) (setup time.Duration, err error)) (SuiteRun, error) {
	r := SuiteRun{Workers: w}
	setups := make([]time.Duration, w)
	g := errgroup.Group{}
	start := time.Now()
	for i := 0; i < w; i++ {
		g.Go(func() error {
			var err error
			setups[i], err = worker(i)
			return err
		})
	}
	err := g.Wait()
	r.WallMs = round3(ms(time.Since(start)))
	for _, s := range setups {
		r.SetupMs = max(r.SetupMs, round3(ms(s)))
	}
	return r, err
}

// suiteLaravel: each worker runs migrate:fresh on its own database before
// its first test (as Laravel's DatabaseTruncation and parallel testing do)
// and truncates before every other test.
func suiteLaravel(ctx context.Context, s *baseServer, src migrations.Source, workers, tests int) (SuiteRun, error) {
	per := tests / workers
	r, err := runWorkers(workers, func(i int) (time.Duration, error) {
		database := fmt.Sprintf("suite_w%d", i)
		start := time.Now()
		if err := s.migrateFresh(ctx, database, src); err != nil {
			return 0, err
		}
		db, conn, err := s.appConn(ctx, database)
		if err != nil {
			return 0, err
		}
		defer db.Close()
		defer conn.Close()
		l, err := newLaravel(ctx, conn, src)
		if err != nil {
			return 0, err
		}
		setup := time.Since(start)
		for t := 0; t < per; t++ {
			if t > 0 {
				if _, err := l.truncate(ctx); err != nil {
					return setup, err
				}
			}
			if err := workload.Test(ctx, conn); err != nil {
				return setup, err
			}
		}
		return setup, nil
	})
	r.Tests = per * workers
	return r, err
}

// suiteTestdbd: each worker acquires a lease, then resets through the REST
// API before every test but the first, and releases at the end.
func suiteTestdbd(ctx context.Context, d *daemon, variant string, workers, tests int) (SuiteRun, error) {
	per := tests / workers
	r, err := runWorkers(workers, func(i int) (time.Duration, error) {
		start := time.Now()
		l, err := d.acquire(ctx, mainTemplate, strategyName[variant], fmt.Sprintf("suite-w%d", i))
		if err != nil {
			return 0, err
		}
		setup := time.Since(start)
		defer func() { _ = d.release(context.WithoutCancel(ctx), l.ID) }()
		db, err := openLease(l)
		if err != nil {
			return setup, err
		}
		defer db.Close()
		for t := 0; t < per; t++ {
			if t > 0 {
				if _, err := d.api.ResetLease(ctx, l.ID, ""); err != nil {
					return setup, err
				}
			}
			if err := runTest(ctx, db, variant == vRollback); err != nil {
				return setup, err
			}
		}
		return setup, nil
	})
	r.Tests = per * workers
	return r, err
}

// scalePhase: the same test and resets on a template of plan.Tables and one
// of plan.BigTables tables, each on a daemon of its own holding the
// template and one lease per strategy, interleaved.
func (b *bench) scalePhase(ctx context.Context) error {
	b.progress("scale: daemons with a %d-table and a %d-table template", b.plan.Tables, b.plan.BigTables)
	sizes := []int{b.plan.Tables, b.plan.BigTables}
	daemons := make([]*daemon, len(sizes))
	g, gctx := errgroup.WithContext(ctx)
	for i, n := range sizes {
		g.Go(func() error {
			d, err := b.templateDaemon(gctx, fmt.Sprintf("scale%d", n), fmt.Sprintf("std%d", n), n, 3)
			daemons[i] = d
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var vs []variant
	defer func() {
		for _, v := range vs {
			v.close()
		}
		for _, d := range daemons {
			b.stopDaemon(d)
		}
	}()
	for i, n := range sizes {
		for _, s := range strategyVariants {
			v, err := newLeaseVariant(ctx, fmt.Sprintf("%s@%d", s, n), daemons[i], fmt.Sprintf("std%d", n), "scale-"+s)
			if err != nil {
				return err
			}
			vs = append(vs, v)
		}
		// What any exact reset through REST does at that size.
		ess, err := newFloorVariants(ctx, daemons[i], fmt.Sprintf("std%d", n), fmt.Sprintf("@%d", n), nil, strategyVariants)
		if err != nil {
			return err
		}
		vs = append(vs, ess...)
	}
	samples, err := b.interleaveScale(ctx, vs, "scale")
	b.res.Scale = samples
	return err
}

// interleaveScale runs vs by the scale phase's protocol: ScaleBatches
// batches of Warmup untimed and ScalePerBatch timed samples per variant,
// reported as phase.
func (b *bench) interleaveScale(ctx context.Context, vs []variant, phase string) ([]ResetSample, error) {
	return interleave(ctx, vs, b.plan.ScaleBatches, func(variant) (int, int) {
		return b.plan.Warmup, b.plan.ScalePerBatch
	}, func(batch int) {
		b.progress("%s: batch %d/%d", phase, batch+1, b.plan.ScaleBatches)
	})
}

// copyDir copies a directory tree of regular files.
func copyDir(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// cachePhase: a template of plan.CacheMigrations migrations is built by a
// daemon that saves it in a cache directory; then plan.CacheRestores
// daemons, each on a state directory of its own and the same cache
// directory (a CI cache restored between jobs), ensure the same template.
func (b *bench) cachePhase(ctx context.Context) error {
	cacheDir, err := os.MkdirTemp(b.tmp, "cache")
	if err != nil {
		return err
	}
	src := workload.History(b.plan.CacheMigrations)
	files := make([]client.MigrationFile, len(src.Files))
	for i, f := range src.Files {
		files[i] = client.MigrationFile{Name: f.Name, Content: string(f.Content)}
	}
	for run := 0; run <= b.plan.CacheRestores; run++ {
		c, err := b.cacheRun(ctx, run, cacheDir, files)
		if err != nil {
			return err
		}
		b.res.Cache = append(b.res.Cache, c)
		b.progress("template cache: %d migrations, %s in %.0f ms (daemon total %.0f ms, migrate %.0f ms, restore %.0f ms)",
			c.Migrations, c.Source, c.ClientMs, c.Build.TotalMs, c.Build.MigrateMs, c.Build.RestoreMs)
	}
	return nil
}

func (b *bench) cacheRun(ctx context.Context, run int, cacheDir string, files []client.MigrationFile) (CacheRun, error) {
	c := CacheRun{Run: run, Migrations: len(files)}
	d, err := b.startDaemon(ctx, "cache", "--warm", "1", "--max-instances", "1", "--cache-dir", cacheDir)
	if err != nil {
		return c, err
	}
	defer b.stopDaemon(d)
	start := time.Now()
	t, err := d.api.EnsureTemplate(ctx, client.EnsureTemplateRequest{Name: "history", Migrations: files, PoolSize: 1})
	if err == nil && t.State != client.TemplateReady {
		err = fmt.Errorf("template history is %s: %s", t.State, t.Error)
	}
	if err != nil {
		return c, err
	}
	c.ClientMs, c.Source, c.Tables, c.Build = round3(ms(time.Since(start))), t.Source, int(t.Tables), t.Build
	want := "cache"
	if run == 0 {
		want = "migrations"
	}
	if c.Source != want {
		return c, fmt.Errorf("run %d: the template came from %q, want %q", run, c.Source, want)
	}
	if run > 0 {
		return c, nil
	}
	// The daemon writes the cache entry after the template is ready.
	entry := filepath.Join(cacheDir, t.Hash+".tdbimg")
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if _, err := os.Stat(entry); err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("the daemon did not write %s within 2 minutes", entry)
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
