package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/testdbd/testdbd/client"
)

// The cold-start phase: daemon start → the standard template built →
// worker databases ready, from the migrations and from the template
// cache, and the memory of the idle server.
var coldPhase = &Phase[coldPlan, coldResults]{
	Name:   "cold-start",
	Full:   coldPlan{Ready: 8, Restarts: 3},
	Quick:  coldPlan{Ready: 8, Restarts: 1},
	Run:    runCold,
	Report: reportCold,
}

type coldPlan struct {
	// Ready worker databases each start waits for. One first start on an
	// empty state directory, then Restarts restarts on it without the
	// template cache and as many with it, interleaved.
	Ready    int `json:"ready"`
	Restarts int `json:"restarts"`
}

type coldResults struct {
	Starts []coldStart `json:"starts"`
}

// coldStart is one daemon start, timed from just before the process
// starts.
type coldStart struct {
	Kind       string  `json:"kind"`        // "first", "migrations" (restart, --cache-dir off) or "cache" (restart)
	Source     string  `json:"source"`      // where the template came from, as the daemon says
	ServingMs  float64 `json:"serving_ms"`  // the daemon logged that it serves (its --warm server is up)
	TemplateMs float64 `json:"template_ms"` // POST /v1/templates returned: the template is built
	ReadyMs    float64 `json:"ready_ms"`    // the pool showed the plan's Ready databases ready
	// The server's resident memory right after the daemon serves (empty)
	// and 1 s after the pool was ready, idle.
	RSSEmptyBytes int64 `json:"rss_empty_bytes"`
	RSSReadyBytes int64 `json:"rss_ready_bytes"`
}

// The kinds of start, in the report's order, with what it calls them.
var coldKinds = []struct{ id, label string }{
	{"first", "first start: empty state directory, the migrations run"},
	{"migrations", "restart, template cache off: the migrations run"},
	{"cache", "restart: the template from the cache"},
}

func runCold(ctx context.Context, b *bench, p coldPlan, r *coldResults) error {
	state, err := b.newStateDir(true)
	if err != nil {
		return err
	}
	kinds := []string{"first"}
	for i := range p.Restarts {
		kinds = append(kinds, batchOrder([]string{"migrations", "cache"}, i)...)
	}
	for _, kind := range kinds {
		c, err := b.coldStart(ctx, p, kind, state)
		if err != nil {
			return fmt.Errorf("%s start: %w", kind, err)
		}
		r.Starts = append(r.Starts, c)
		b.progress("cold start (%s, template from %s): serving %.0f ms, template %.0f ms, %d ready %.0f ms, server RSS %.0f MB idle",
			kind, c.Source, c.ServingMs, c.TemplateMs, p.Ready, c.ReadyMs, float64(c.RSSReadyBytes)/1e6)
	}
	return nil
}

// coldStart starts a daemon on state, has it build the standard template
// and waits for the pool; the first start also waits until the daemon has
// saved the template in its cache.
func (b *bench) coldStart(ctx context.Context, p coldPlan, kind, state string) (coldStart, error) {
	c := coldStart{Kind: kind}
	args := poolArgs(p.Ready)
	if kind == "migrations" {
		args = append(args, "--cache-dir", "off")
	}
	d, err := b.startDaemon(ctx, "cold", state, args...)
	if err != nil {
		return c, err
	}
	defer b.stopDaemon(d)
	c.ServingMs = round3(ms(d.serving))
	if c.RSSEmptyBytes, err = serverRSS(ctx, d); err != nil {
		return c, err
	}
	t, err := d.ensureTemplate(ctx, "cold", p.Ready)
	if err != nil {
		return c, err
	}
	c.TemplateMs, c.Source = round3(ms(time.Since(d.started))), t.Source
	if _, err := d.waitPool(ctx, "cold", 2*time.Minute, 5*time.Millisecond, func(t *client.Template) bool {
		return int(t.Pool.Ready) >= p.Ready
	}); err != nil {
		return c, err
	}
	c.ReadyMs = round3(ms(time.Since(d.started)))
	if want := map[string]string{"first": "migrations", "migrations": "migrations", "cache": "cache"}[kind]; t.Source != want {
		return c, fmt.Errorf("the template came from %q, want %q", t.Source, want)
	}
	time.Sleep(time.Second)
	if c.RSSReadyBytes, err = serverRSS(ctx, d); err != nil {
		return c, err
	}
	if kind == "first" {
		return c, waitFile(ctx, filepath.Join(state, "template-cache", t.Hash+".tdbimg"))
	}
	return c, nil
}

// serverRSS is the resident memory of the daemon's one server.
func serverRSS(ctx context.Context, d *daemon) (int64, error) {
	insts, err := d.api.ListInstances(ctx)
	if err != nil {
		return 0, err
	}
	if len(insts) != 1 {
		return 0, fmt.Errorf("%d server instances, want 1 (--warm 1 --max-instances 1)", len(insts))
	}
	return insts[0].MemoryBytes, nil
}

// waitFile waits up to 2 minutes for a file to exist.
func waitFile(ctx context.Context, path string) error {
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not written within 2 minutes", path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// coldOf is the median of f over the starts of a kind.
func coldOf(r *coldResults, kind string, f func(coldStart) float64) float64 {
	var xs []float64
	for _, c := range r.Starts {
		if c.Kind == kind {
			xs = append(xs, f(c))
		}
	}
	return median(xs)
}

func reportCold(rep *report, p coldPlan, r *coldResults) {
	rep.section("Cold start and memory", fmt.Sprintf("A daemon started on a state directory (`--warm 1`), asked for the "+
		"%d-table standard template and waited for %d worker databases, timed from just before the process starts; "+
		"then stopped. The first start initializes a datadir; restarts reuse the state directory, with and without the "+
		"template cache (`--cache-dir off`), interleaved, %s; medians. Memory is the server's resident set, idle.",
		standardTables, p.Ready, count(p.Restarts, "restart")+" of each"))
	var rows [][]string
	for _, k := range coldKinds {
		if !slices.ContainsFunc(r.Starts, func(c coldStart) bool { return c.Kind == k.id }) {
			continue
		}
		f := func(g func(coldStart) float64) string { return fmtSec(coldOf(r, k.id, g)) }
		rows = append(rows, []string{k.label, f(func(c coldStart) float64 { return c.ServingMs }),
			f(func(c coldStart) float64 { return c.TemplateMs }), f(func(c coldStart) float64 { return c.ReadyMs }),
			fmtMB(coldOf(r, k.id, func(c coldStart) float64 { return float64(c.RSSEmptyBytes) })),
			fmtMB(coldOf(r, k.id, func(c coldStart) float64 { return float64(c.RSSReadyBytes) }))})
	}
	rep.table([]string{"start", "serving s", "template built s", fmt.Sprintf("%d databases ready s", p.Ready),
		"server memory, empty MB", fmt.Sprintf("with the template and %d databases MB", p.Ready)}, rows)
	first := coldOf(r, "first", func(c coldStart) float64 { return c.ReadyMs })
	cache := coldOf(r, "cache", func(c coldStart) float64 { return c.ReadyMs })
	rss := coldOf(r, "cache", func(c coldStart) float64 { return float64(c.RSSReadyBytes) })
	rep.bullet("From daemon start to %d worker databases of the %d-table template: %s s the first time, %s s from the "+
		"template cache; the idle server holding them uses %s MB.", p.Ready, standardTables, fmtSec(first), fmtSec(cache), fmtMB(rss))
}
