package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// enginesPhase: the reset latency phase's testdbd variants (every
// strategy, and snapshot keeping AUTO_INCREMENT) and their floors and
// essentials on each engine of plan.Engines, one engine at a time, each on
// a daemon of its own that serves it in Docker containers. An engine that
// cannot be measured (no Docker engine, its image missing) is recorded as a
// failure of its own and the others go on.
func (b *bench) enginesPhase(ctx context.Context, failed func(phase string, err error) bool) {
	for _, e := range b.plan.Engines {
		if ctx.Err() != nil {
			return
		}
		failed(phaseEngines+" ("+e.ID+")", b.engineRun(ctx, e))
	}
}

// engineRun measures one engine of the engines phase.
func (b *bench) engineRun(ctx context.Context, e EngineImage) error {
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", e.Image).CombinedOutput(); err != nil {
		return fmt.Errorf("image %s is not present (make images builds it): %s", e.Image, strings.TrimSpace(string(out)))
	}
	pool := len(leaseVariants)
	d, err := b.templateDaemonWith(ctx, "engine "+e.ID, []string{"--provider", "docker", "--image", e.Image},
		mainTemplate, b.plan.Tables, pool)
	if err != nil {
		return err
	}
	defer b.stopDaemon(d)
	_, in, err := templateInstance(ctx, d, mainTemplate)
	if err != nil {
		return err
	}
	if !in.DatadirOnTmpfs {
		return fmt.Errorf("the %s server's datadir %s is not on tmpfs", e.ID, in.Datadir)
	}
	b.res.EngineServers = append(b.res.EngineServers, EngineServer{ID: e.ID, Image: e.Image, Version: in.Version, OnTmpfs: in.DatadirOnTmpfs})
	suffix := "@" + e.ID
	var vs []variant
	defer func() {
		for _, v := range vs {
			v.close()
		}
	}()
	for i, name := range leaseVariants {
		v, err := newLeaseVariant(ctx, name+suffix, d, mainTemplate, "engine-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		vs = append(vs, v)
	}
	floors, err := newFloorVariants(ctx, d, mainTemplate, suffix, leaseVariants, leaseVariants)
	if err != nil {
		return err
	}
	vs = append(vs, floors...)
	samples, err := interleave(ctx, vs, b.plan.EngineBatches, func(variant) (int, int) {
		return b.plan.Warmup, b.plan.EnginePerBatch
	}, func(batch int) {
		b.progress("engines: %s: batch %d/%d", e.ID, batch+1, b.plan.EngineBatches)
	})
	b.res.EngineResets = append(b.res.EngineResets, samples...)
	return err
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
