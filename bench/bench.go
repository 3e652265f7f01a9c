package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/testdbd/testdbd/migrations"
)

// bench is one run: what it measures, what it started (to stop it however
// the run ends), and the results.
type bench struct {
	quick   bool
	bin     string // the daemon binary
	diskDir string
	engines []EngineImage // --engines; nil: the engines phase's plan
	log     io.Writer
	start   time.Time
	res     *Results

	tmp       string // binaries, state directories
	pristine  string // an initialized datadir shared by every server of the run
	mu        sync.Mutex
	daemons   []*daemon
	disk      *baseServer // the baselines, started when a phase first asks
	tmpfs     *baseServer
	startPIDs map[int]bool // servers running before the run (not ours)
}

// The main template: the standard workload at standardTables tables.
const (
	mainTemplate   = "std"
	standardTables = 100
)

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// run prepares the machine and runs the phases one after the other. A
// phase that fails is recorded with its error and the run goes on, so
// that one failure does not hide the rest.
func (b *bench) run(ctx context.Context, phases []phase) error {
	if err := b.prepare(ctx); err != nil {
		return err
	}
	for _, ph := range phases {
		if ctx.Err() != nil {
			break
		}
		b.progress("phase %s", ph.name())
		rec, err := ph.run(ctx, b, b.quick)
		if err != nil && ctx.Err() == nil {
			b.progress("phase %s FAILED: %v; going on with the others", ph.name(), err)
		}
		b.res.Phases = append(b.res.Phases, rec)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	b.res.Machine.LoadEnd = loadAvg()
	b.res.Seconds = math.Round(time.Since(b.start).Seconds()*10) / 10
	return nil
}

// prepare describes the machine, builds the daemon and initializes the
// datadir every server of the run starts from.
func (b *bench) prepare(ctx context.Context) error {
	var err error
	if b.tmp, err = os.MkdirTemp("", "tdbb"); err != nil {
		return err
	}
	b.startPIDs = serverPIDs()
	m := &b.res.Machine
	*m = readMachine()
	m.OtherServers, m.DiskPath = len(b.startPIDs), b.diskDir
	if onTmpfs, err := native.IsTmpfs(b.diskDir); err != nil {
		return fmt.Errorf("--disk-dir %s: %w", b.diskDir, err)
	} else if onTmpfs {
		return fmt.Errorf("--disk-dir %s is on tmpfs: the disk-backed baseline needs a directory on disk", b.diskDir)
	}
	if m.DiskFsyncMs, err = fsyncCost(b.diskDir, 64); err != nil {
		return err
	}
	if m.TmpfsFsyncMs, err = fsyncCost("/dev/shm", 64); err != nil {
		return err
	}
	if err := b.prepareBinary(ctx); err != nil {
		return err
	}
	// A native provider initializes a pristine datadir in its state
	// directory: servers and daemons of the run start from copies of it.
	state := filepath.Join(b.tmp, "p")
	p, err := native.New(ctx, native.Config{StateDir: state, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	m.Server = p.Engine().String()
	if err := p.Close(ctx); err != nil {
		return err
	}
	b.pristine = filepath.Join(state, "pristine")
	b.progress("machine: %s, %d cores, %.1f GiB, kernel %s, %s; disk fsync %.3f ms, tmpfs %.3f ms",
		m.CPU, m.Cores, float64(m.MemoryBytes)/(1<<30), m.Kernel, m.Server, m.DiskFsyncMs, m.TmpfsFsyncMs)
	return nil
}

// prepareBinary builds the daemon from the repository's root module unless
// one was given, and records its version.
func (b *bench) prepareBinary(ctx context.Context) error {
	if b.bin == "" {
		out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/testdbd/testdbd").Output()
		if err != nil {
			return fmt.Errorf("finding the repository's root (go list -m; run the benchmark inside bench/, or pass --testdbd): %w", err)
		}
		root := strings.TrimSpace(string(out))
		version := "bench"
		if out, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--tags", "--always", "--dirty").Output(); err == nil {
			version = strings.TrimSpace(string(out))
		}
		b.bin = filepath.Join(b.tmp, "testdbd")
		b.progress("building the daemon (go build ./cmd/testdbd in %s)", root)
		cmd := exec.CommandContext(ctx, "go", "build", "-C", root, "-ldflags", "-X github.com/testdbd/testdbd.Version="+version,
			"-o", b.bin, "./cmd/testdbd")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/testdbd: %w\n%s", err, out)
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
// under 108 bytes), with a copy of the run's initialized datadir unless
// empty is set.
func (b *bench) newStateDir(empty bool) (string, error) {
	dir, err := os.MkdirTemp(b.tmp, "s")
	if err != nil {
		return "", err
	}
	if !empty && b.pristine != "" {
		if err := copyDir(b.pristine, filepath.Join(dir, "pristine")); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// startDaemon starts `testdbd serve` on a state directory, keeping it to
// stop at cleanup.
func (b *bench) startDaemon(ctx context.Context, name, state string, args ...string) (*daemon, error) {
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

// poolArgs are the flags of a daemon with one server holding exactly pool
// worker databases.
func poolArgs(pool int) []string {
	n := strconv.Itoa(pool)
	return []string{"--warm", "1", "--max-instances", "1", "--pool-size", n, "--max-databases", n, "--max-databases-per-instance", n}
}

// templateDaemon starts a daemon (with more flags args) whose one server
// holds template (the standard workload, plus the extra migration files)
// and a pool of exactly pool worker databases, and waits until they are
// ready.
func (b *bench) templateDaemon(ctx context.Context, name string, args []string, template string, pool int, extra ...client.MigrationFile) (*daemon, error) {
	return b.daemonWith(ctx, name, append(poolArgs(pool), args...), template, pool, func(d *daemon) error {
		_, err := d.ensureTemplate(ctx, template, pool, extra...)
		return err
	})
}

// sourceDaemon is templateDaemon for a template of src alone (no standard
// workload), with templatePool databases of a pool of pool in all.
func (b *bench) sourceDaemon(ctx context.Context, name string, args []string, template string, templatePool int, src migrations.Source, pool int) (*daemon, error) {
	return b.daemonWith(ctx, name, append(poolArgs(pool), args...), template, templatePool, func(d *daemon) error {
		return d.ensureSource(ctx, template, templatePool, src)
	})
}

// daemonWith starts a daemon with args, builds its template by ensure and
// waits until pool databases of it are ready.
func (b *bench) daemonWith(ctx context.Context, name string, args []string, template string, pool int, ensure func(*daemon) error) (*daemon, error) {
	state, err := b.newStateDir(false)
	if err != nil {
		return nil, err
	}
	d, err := b.startDaemon(ctx, name, state, args...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := ensure(d); err != nil {
		b.stopDaemon(d)
		return nil, err
	}
	if err := d.waitIdle(ctx, template, pool); err != nil {
		b.stopDaemon(d)
		return nil, err
	}
	b.progress("daemon %q: template and %d databases ready after %.0f ms", name, pool, ms(time.Since(start)))
	return d, nil
}

// baselines returns the disk-backed and the tmpfs baseline servers,
// starting them on the first call; they run until the run's end.
func (b *bench) baselines(ctx context.Context) (disk, tmpfs *baseServer, err error) {
	if b.disk != nil {
		return b.disk, b.tmpfs, nil
	}
	b.progress("starting the baseline servers (disk-backed, default settings; tmpfs)")
	g, gctx := errgroup.WithContext(ctx)
	var servers [2]*baseServer
	for i, onDisk := range []bool{true, false} {
		g.Go(func() error {
			var err error
			servers[i], err = startBaseline(gctx, onDisk, b.tmp, b.diskDir, b.pristine)
			return err
		})
	}
	err = g.Wait()
	if err != nil {
		servers[0].close()
		servers[1].close()
		return nil, nil, err
	}
	b.disk, b.tmpfs = servers[0], servers[1]
	return b.disk, b.tmpfs, nil
}

// cleanup stops whatever still runs, removes the run's files and checks
// that no server of the run is left.
func (b *bench) cleanup() {
	b.mu.Lock()
	daemons := append([]*daemon(nil), b.daemons...)
	b.mu.Unlock()
	for _, d := range daemons {
		b.stopDaemon(d)
	}
	owned := []string{b.tmp}
	for _, s := range []*baseServer{b.disk, b.tmpfs} {
		if s != nil && s.diskRoot != "" {
			owned = append(owned, s.diskRoot)
		}
		s.close()
	}
	if b.tmp == "" {
		return
	}
	b.removeContainers()
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, " "+b.tmp+"/") {
			b.progress("warning: a mount of the run is left: %s", line)
		}
	}
	_ = os.RemoveAll(b.tmp)
	for pid := range serverPIDs() {
		cmdline := readFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for _, path := range owned {
			if strings.Contains(cmdline, path+"/") {
				b.progress("warning: server process %d of the run is still running", pid)
			}
		}
	}
}

// removeContainers removes the containers of the run's daemons that are
// left (a daemon that was killed leaves its containers behind), saying so.
func (b *bench) removeContainers() {
	if _, err := exec.LookPath("docker"); err != nil {
		return
	}
	out, err := exec.Command("docker", "ps", "-a", "--format", `{{.ID}} {{.Label "`+docker.LabelStateDir+`"}}`).Output()
	if err != nil {
		return // no Docker engine: no container of the run either
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
