package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

const usage = `bench: testdbd's benchmark.

Usage:
  bench [--quick] [--out DIR] [--testdbd BIN] [--disk-dir DIR] [--engines LIST]
        run the benchmark; write DIR/benchmarks.json (raw samples),
        DIR/benchmarks.md (the report) and DIR/benchmarks-reset.svg (the chart)
  bench report [-w] FILE.json
        recompute the report from the raw samples: print it, or with -w write
        the .md and .svg next to FILE.json
  bench workload [-tables N] DIR
        write the standard workload to DIR/migrations (goose files) and
        DIR/seed.sql, to reproduce a measurement by hand (POST /v1/templates
        with migrations_dir and seed_sql)

Flags:
`

// Output file names, in the --out directory.
const (
	jsonFile  = "benchmarks.json"
	mdFile    = "benchmarks.md"
	chartFile = "benchmarks-reset.svg"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "report" {
		return runReport(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "workload" {
		return runWorkload(args[1:], stderr)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	quick := fs.Bool("quick", false, "a small run (under a minute) that exercises every phase")
	out := fs.String("out", "cmd/bench/out", "directory for the results, the report and the chart")
	bin := fs.String("testdbd", "", "the daemon binary to measure; empty builds ./cmd/testdbd into a temporary directory")
	diskDir := fs.String("disk-dir", "/var/tmp", "a directory on disk (not tmpfs) for the disk-backed baseline's datadir")
	engines := fs.String("engines", "", "the engines phase's engines, comma-separated ("+engineIDs(dockerEngines)+"), or none; empty: all (--quick: mysql-9.7)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	// A reset ends the lease's sessions; the driver's note about each
	// closed idle connection it then replaces is expected, not news.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	plan := fullPlan()
	if *quick {
		plan = quickPlan()
	}
	if *engines != "" {
		var err error
		if plan.Engines, err = selectEngines(*engines); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	limit := 30 * time.Minute
	if *quick {
		limit = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	b := &bench{plan: plan, bin: *bin, diskDir: *diskDir, log: stderr, start: time.Now()}
	b.res = &Results{Format: formatVersion, Plan: plan, Command: "bench " + strings.Join(args, " "),
		Started: b.start.UTC().Format(time.RFC3339)}
	err := b.run(ctx)
	b.cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	path := filepath.Join(*out, jsonFile)
	if err := writeResults(path, b.res); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if err := writeReport(path); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	b.progress("wrote %s, %s and %s in %s", path, filepath.Join(*out, mdFile), filepath.Join(*out, chartFile), *out)
	return 0
}

// runReport is `bench report`: the tables from the raw samples, nothing rerun.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("w", false, "write the .md and .svg next to the JSON file instead of printing the report")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: bench report [-w] FILE.json")
		return 2
	}
	path := fs.Arg(0)
	if *write {
		if err := writeReport(path); err != nil {
			fmt.Fprintln(stderr, "bench report:", err)
			return 1
		}
		return 0
	}
	r, err := readResults(path)
	if err != nil {
		fmt.Fprintln(stderr, "bench report:", err)
		return 1
	}
	fmt.Fprint(stdout, renderMarkdown(r))
	return 0
}

// runWorkload is `bench workload`: the standard workload as files.
func runWorkload(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tables := fs.Int("tables", 100, "tables of the workload")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: bench workload [-tables N] DIR")
		return 2
	}
	dir := fs.Arg(0)
	src := standardSource(*tables)
	if err := os.MkdirAll(filepath.Join(dir, "migrations"), 0o755); err != nil {
		fmt.Fprintln(stderr, "bench workload:", err)
		return 1
	}
	for _, f := range src.Files {
		if err := os.WriteFile(filepath.Join(dir, "migrations", f.Name), f.Content, 0o644); err != nil {
			fmt.Fprintln(stderr, "bench workload:", err)
			return 1
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "seed.sql"), []byte(src.Seed), 0o644); err != nil {
		fmt.Fprintln(stderr, "bench workload:", err)
		return 1
	}
	return 0
}

// writeReport renders the report and the chart of a results file next to it.
func writeReport(path string) error {
	r, err := readResults(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.WriteFile(filepath.Join(dir, mdFile), []byte(renderMarkdown(r)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, chartFile), []byte(renderChart(r)), 0o644)
}
