package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// phases are the benchmark's phases, in the order they run and the report
// lists them. A phase is one file (phase_*.go): its plan and results
// types, its run function and its part of the report, in a Phase value
// listed here.
var phases = []phase{
	resetPhase,
	enginesPhase,
	acquirePhase,
	concurrentPhase,
	suitePhase,
	frameworksPhase,
	bigTablesPhase,
	realSchemaPhase,
	coldPhase,
}

// Phase is one part of the benchmark whose plan is P and whose results are
// R. Both are kept in the results file as JSON, so that Report computes
// its tables from them alone, in this run or in `bench report` later.
type Phase[P, R any] struct {
	// Name is the phase's key in the results file and in --phases.
	Name string
	// Full and Quick are the plans of a full run and of --quick (few
	// samples, every part exercised).
	Full, Quick P
	// Run measures, filling in the results as it goes: when it fails, what
	// it measured before is kept with its error.
	Run func(ctx context.Context, b *bench, p P, r *R) error
	// Report adds the phase's headline bullets and its section to rep.
	Report func(rep *report, p P, r *R)
}

// phase is a Phase of any types, as the run and the report handle it.
type phase interface {
	name() string
	plan(quick bool) any
	run(ctx context.Context, b *bench, quick bool) (PhaseRecord, error)
	render(rep *report, rec PhaseRecord) error
}

func (ph *Phase[P, R]) name() string { return ph.Name }

func (ph *Phase[P, R]) plan(quick bool) any {
	if quick {
		return ph.Quick
	}
	return ph.Full
}

// run runs the phase with its full or quick plan and records it; the
// error is the phase's own, also kept in the record.
func (ph *Phase[P, R]) run(ctx context.Context, b *bench, quick bool) (PhaseRecord, error) {
	p := ph.Full
	if quick {
		p = ph.Quick
	}
	var r R
	start := time.Now()
	runErr := ph.Run(ctx, b, p, &r)
	rec := PhaseRecord{Name: ph.Name, Seconds: math.Round(time.Since(start).Seconds()*10) / 10}
	if runErr != nil {
		rec.Error = runErr.Error()
	}
	var err error
	if rec.Plan, err = json.Marshal(p); err != nil {
		return rec, err
	}
	if rec.Results, err = json.Marshal(&r); err != nil {
		return rec, err
	}
	return rec, runErr
}

// render decodes the record's plan and results into the phase's types and
// reports them.
func (ph *Phase[P, R]) render(rep *report, rec PhaseRecord) error {
	var p P
	var r R
	if err := json.Unmarshal(rec.Plan, &p); err != nil {
		return fmt.Errorf("phase %s: plan: %w", rec.Name, err)
	}
	if err := json.Unmarshal(rec.Results, &r); err != nil {
		return fmt.Errorf("phase %s: results: %w", rec.Name, err)
	}
	ph.Report(rep, p, &r)
	return nil
}

// phaseNames lists the registered phases' names.
func phaseNames() string {
	var names []string
	for _, ph := range phases {
		names = append(names, ph.name())
	}
	return strings.Join(names, ", ")
}

// selectPhases is --phases: the registered phases named in list
// (comma-separated), in the registry's order; all for an empty list.
func selectPhases(list string) ([]phase, error) {
	if strings.TrimSpace(list) == "" {
		return phases, nil
	}
	names := strings.Split(list, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
		if !slices.ContainsFunc(phases, func(ph phase) bool { return ph.name() == names[i] }) {
			return nil, fmt.Errorf("--phases names %q: use some of %s", names[i], phaseNames())
		}
	}
	var out []phase
	for _, ph := range phases {
		if slices.Contains(names, ph.name()) {
			out = append(out, ph)
		}
	}
	return out, nil
}
