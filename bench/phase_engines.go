package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// The engines phase: the strategies' resets on every engine the project
// runs in Docker, each beside Laravel-style truncation on the same server.
var enginesPhase = &Phase[enginesPlan, enginesResults]{
	Name:   "engines",
	Full:   enginesPlan{Engines: dockerEngines, Batches: 6, Warmup: 2, PerBatch: 8},
	Quick:  enginesPlan{Engines: dockerEngines, MaxEngines: 1, Batches: 1, Warmup: 1, PerBatch: 3},
	Run:    runEngines,
	Report: reportEngines,
}

type enginesPlan struct {
	Engines []EngineImage `json:"engines"`
	// MaxEngines measures only the first engines whose image is present
	// (0: all).
	MaxEngines int `json:"max_engines,omitempty"`
	// Each engine's variants are interleaved in Batches batches of Warmup
	// untimed and PerBatch timed samples each.
	Batches  int `json:"batches"`
	Warmup   int `json:"warmup"`
	PerBatch int `json:"per_batch"`
}

type enginesResults struct {
	Engines []engineRun `json:"engines"`
}

// engineRun is one engine's measurement, or why it was skipped.
type engineRun struct {
	ID      string   `json:"id"`
	Image   string   `json:"image"`
	Version string   `json:"version,omitempty"` // the server's, as the daemon reports it
	Skipped string   `json:"skipped,omitempty"`
	Resets  []Series `json:"resets,omitempty"` // "laravel" and each strategy
}

// EngineImage is an engine the engines phase measures: the server image a
// daemon serves it from and the make target that builds it.
type EngineImage struct {
	ID     string `json:"id"`
	Image  string `json:"image"`
	Target string `json:"make_target"`
}

// dockerEngines are the server images `make images` builds.
var dockerEngines = []EngineImage{
	{"mariadb-10.11", "testdbd/mariadb:10.11-local", "image"},
	{"mariadb-11.8", "testdbd/mariadb:11.8-local", "image-mariadb-11.8"},
	{"mysql-9.7", "testdbd/mysql:9.7-local", "image-mysql-9.7"},
}

func runEngines(ctx context.Context, b *bench, p enginesPlan, r *enginesResults) error {
	engines := p.Engines
	if b.engines != nil {
		engines = b.engines
	}
	measured := 0
	for _, e := range engines {
		run := engineRun{ID: e.ID, Image: e.Image}
		switch {
		case p.MaxEngines > 0 && measured >= p.MaxEngines:
			run.Skipped = fmt.Sprintf("a quick run measures %s", count(p.MaxEngines, "engine"))
		default:
			run.Skipped = imageMissing(ctx, e)
		}
		if run.Skipped != "" {
			b.progress("engines: %s skipped: %s", e.ID, run.Skipped)
			r.Engines = append(r.Engines, run)
			continue
		}
		measured++
		err := b.engineRun(ctx, p, e, &run)
		r.Engines = append(r.Engines, run)
		if err != nil {
			return fmt.Errorf("%s: %w", e.ID, err)
		}
	}
	return nil
}

// imageMissing says why an engine's image cannot be used, "" if it can.
func imageMissing(ctx context.Context, e EngineImage) string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "no docker command"
	}
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", e.Image).CombinedOutput(); err != nil {
		if strings.Contains(strings.ToLower(string(out)), "no such image") {
			return fmt.Sprintf("image %s is missing (`make %s` builds it)", e.Image, e.Target)
		}
		return fmt.Sprintf("docker image inspect %s: %s", e.Image, oneLine(string(out)))
	}
	return ""
}

// engineRun measures one engine on a daemon of its own serving it in
// Docker containers.
func (b *bench) engineRun(ctx context.Context, p enginesPlan, e EngineImage, run *engineRun) error {
	pool := len(strategies) + 1
	d, err := b.templateDaemon(ctx, "engine "+e.ID, []string{"--provider", "docker", "--image", e.Image}, mainTemplate, pool)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	if insts, err := d.api.ListInstances(ctx); err == nil && len(insts) > 0 {
		run.Version = insts[0].Version
	}
	var vs []variant
	defer func() { closeAll(vs) }()
	v, err := newLeaseLaravelVariant(ctx, "laravel", d, mainTemplate, "engine-laravel", standardSource(standardTables))
	if err != nil {
		return err
	}
	vs = append(vs, v)
	for _, s := range strategies {
		v, err := newLeaseVariant(ctx, s, d, mainTemplate, s, "engine-"+s, false)
		if err != nil {
			return err
		}
		vs = append(vs, v)
	}
	run.Resets, err = interleave(ctx, vs, uniform(p.Batches, p.Warmup, p.PerBatch),
		func(batch int) { b.progress("engines: %s: batch %d/%d", e.ID, batch+1, p.Batches) })
	return err
}

func reportEngines(rep *report, p enginesPlan, r *enginesResults) {
	rep.section("Engines", fmt.Sprintf("The same test and resets on each engine the project runs in Docker, one engine "+
		"at a time, each on a daemon of its own (`--provider docker --image …`, the datadir on tmpfs), interleaved in "+
		"%s of %d. The baseline is Laravel-style truncation of a worker database of the same server, "+
		"without the daemon.", count(p.Batches, "batch"), p.PerBatch))
	header := []string{"engine", "Laravel-style truncation p50 ms"}
	for _, s := range strategies {
		header = append(header, s+" p50 / p99 ms")
	}
	header = append(header, "snapshot speed-up vs Laravel")
	var rows [][]string
	var bullets, skipped []string
	for _, e := range r.Engines {
		if e.Skipped != "" {
			skipped = append(skipped, e.ID+": "+e.Skipped)
			continue
		}
		laravel := median(seriesOf(e.Resets, "laravel"))
		row := []string{e.ID + " (" + e.Version + ")", fmtMs(laravel)}
		for _, s := range strategies {
			row = append(row, p50p99(summarize(seriesOf(e.Resets, s))))
		}
		snap := median(seriesOf(e.Resets, "snapshot"))
		rows = append(rows, append(row, fmtX(laravel/snap)))
		bullets = append(bullets, fmt.Sprintf("%s ms on %s (%s faster than Laravel-style truncation there)", fmtMs(snap), e.ID, fmtX(laravel/snap)))
	}
	if len(rows) > 0 {
		rep.table(header, rows)
		rep.bullet("In Docker, a snapshot reset takes p50 %s.", strings.Join(bullets, "; "))
	}
	if len(skipped) > 0 {
		rep.para("Not measured in this run: %s.", strings.Join(skipped, "; "))
	}
}

// engineIDs lists the IDs of engines.
func engineIDs(engines []EngineImage) string {
	var ids []string
	for _, e := range engines {
		ids = append(ids, e.ID)
	}
	return strings.Join(ids, ", ")
}

// selectEngines is --engines: the engines named in list (comma-separated
// IDs), none for "none".
func selectEngines(list string) ([]EngineImage, error) {
	if strings.TrimSpace(list) == "none" {
		return nil, nil
	}
	var out []EngineImage
	for _, id := range strings.Split(list, ",") {
		id = strings.TrimSpace(id)
		i := slices.IndexFunc(dockerEngines, func(e EngineImage) bool { return e.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("--engines names %q: use some of %s, or none", id, engineIDs(dockerEngines))
		}
		if !slices.Contains(out, dockerEngines[i]) {
			out = append(out, dockerEngines[i])
		}
	}
	return out, nil
}
