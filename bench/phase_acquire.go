package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/testdbd/testdbd/client"
)

// The acquire phase: a lease from a ready pool, with 1 and with many
// clients at once, beside the cheapest call of the same API (GET /healthz)
// from as many clients.
var acquirePhase = &Phase[acquirePlan, acquireResults]{
	Name:   "acquire",
	Full:   acquirePlan{Clients: []int{1, 32}, Rounds: 25, Warmup: 2, Singles: 8, Pool: 34},
	Quick:  acquirePlan{Clients: []int{1, 32}, Rounds: 2, Warmup: 1, Singles: 4, Pool: 34},
	Run:    runAcquire,
	Report: reportAcquire,
}

type acquirePlan struct {
	// Rounds rounds after Warmup untimed ones; in each, every level of
	// Clients runs once (Singles sequential acquires for 1 client, one
	// simultaneous burst for more).
	Clients []int `json:"clients"`
	Rounds  int   `json:"rounds"`
	Warmup  int   `json:"warmup"`
	Singles int   `json:"singles"`
	Pool    int   `json:"pool"` // the daemon's worker databases: more than the most clients
}

type acquireResults struct {
	// Series "acquire/N" and "healthz/N" for N clients.
	Series []Series `json:"series"`
}

func runAcquire(ctx context.Context, b *bench, p acquirePlan, r *acquireResults) error {
	d, err := b.templateDaemon(ctx, "acquire", nil, mainTemplate, p.Pool)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	samples := map[string][]float64{}
	defer func() {
		for _, c := range p.Clients {
			for _, kind := range []string{"acquire", "healthz"} {
				name := kind + "/" + strconv.Itoa(c)
				r.Series = append(r.Series, Series{Name: name, Ms: samples[name]})
			}
		}
	}()
	for i := range p.Warmup + p.Rounds {
		round := i - p.Warmup
		if round >= 0 && (round%5 == 0 || round == p.Rounds-1) {
			b.progress("acquire: round %d/%d (clients %v)", round+1, p.Rounds, p.Clients)
		}
		for _, c := range batchOrder(p.Clients, i) {
			bursts := 1
			if c == 1 {
				bursts = p.Singles
			}
			for range bursts {
				a, h, err := acquireRound(ctx, d, c)
				if err != nil {
					return err
				}
				if round >= 0 {
					samples["acquire/"+strconv.Itoa(c)] = append(samples["acquire/"+strconv.Itoa(c)], a...)
					samples["healthz/"+strconv.Itoa(c)] = append(samples["healthz/"+strconv.Itoa(c)], h...)
				}
			}
		}
	}
	return d.waitIdle(ctx, mainTemplate, p.Pool)
}

// acquireRound times n clients acquiring at once from an idle pool, then,
// the pool idle again, n clients calling GET /healthz at once.
func acquireRound(ctx context.Context, d *daemon, n int) (acquire, health []float64, err error) {
	if err := d.waitIdle(ctx, mainTemplate, n); err != nil {
		return nil, nil, err
	}
	if acquire, err = acquireBurst(ctx, d, n); err != nil {
		return nil, nil, err
	}
	if err := d.waitIdle(ctx, mainTemplate, n); err != nil {
		return nil, nil, err
	}
	health = make([]float64, n)
	errs := make([]error, n)
	together(n, func(i int) {
		t0 := time.Now()
		errs[i] = d.api.Health(ctx)
		health[i] = round3(ms(time.Since(t0)))
	})
	return acquire, health, errors.Join(errs...)
}

// acquireBurst has n clients acquire at once, then releases every lease.
func acquireBurst(ctx context.Context, d *daemon, n int) ([]float64, error) {
	out := make([]float64, n)
	ids := make([]string, n)
	errs := make([]error, n)
	together(n, func(i int) {
		t0 := time.Now()
		l, err := d.acquire(ctx, mainTemplate, client.StrategySnapshot, "", false)
		out[i] = round3(ms(time.Since(t0)))
		if errs[i] = err; err == nil {
			ids[i] = l.ID
		}
	})
	var wg sync.WaitGroup
	for i := range ids {
		if ids[i] != "" {
			wg.Go(func() {
				if err := d.release(ctx, ids[i]); err != nil && errs[i] == nil {
					errs[i] = err
				}
			})
		}
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// together runs f(0) … f(n-1), each in a goroutine of its own, released at
// once when all are ready, and waits for them.
func together(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

func reportAcquire(rep *report, p acquirePlan, r *acquireResults) {
	rep.section("Acquire from a ready pool", fmt.Sprintf("`POST /v1/leases` of the %d-table template from a pool of %d "+
		"ready databases, the clients starting together, each on its own keep-alive connection; beside it, in a round of "+
		"its own, `GET /healthz` (which does nothing) from as many clients: what HTTP over loopback costs on this machine "+
		"before the daemon does any work. %s.", standardTables, p.Pool, count(p.Rounds, "round")))
	var rows [][]string
	for _, c := range p.Clients {
		a := summarize(seriesOf(r.Series, "acquire/"+strconv.Itoa(c)))
		h := summarize(seriesOf(r.Series, "healthz/"+strconv.Itoa(c)))
		rows = append(rows, []string{strconv.Itoa(c), fmtMs(a.P50), fmtMs(a.P99), fmtMs(h.P50), fmtMs(h.P99), fmtX(a.P50 / h.P50)})
	}
	rep.table([]string{"clients at once", "acquire p50 ms", "acquire p99 ms", "GET /healthz p50 ms", "GET /healthz p99 ms",
		"acquire / healthz (p50)"}, rows)
}
