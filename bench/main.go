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
  bench [--quick] [--out DIR] [--phases LIST] [--engines LIST] [--testdbd BIN] [--disk-dir DIR]
        run the benchmark; write DIR/benchmarks.json (raw samples) and
        DIR/benchmarks.md (the report)
  bench report [-w] FILE.json
        recompute the report from the raw samples: print it, or with -w write
        it next to FILE.json
  bench workload [-tables N] DIR
        write the standard workload to DIR/migrations (goose files) and
        DIR/seed.sql, to reproduce a measurement by hand (POST /v1/templates
        with migrations_dir and seed_sql)

Flags:
`

// Output file names, in the --out directory.
const (
	jsonFile = "benchmarks.json"
	mdFile   = "benchmarks.md"
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
	quick := fs.Bool("quick", false, "a small run (about two minutes) that exercises every phase with few samples")
	out := fs.String("out", "out", "directory for the results and the report")
	only := fs.String("phases", "", "the phases to run, comma-separated ("+phaseNames()+"); empty: all")
	engines := fs.String("engines", "", "the engines phase's engines, comma-separated ("+engineIDs(dockerEngines)+"), or none; empty: all whose image is present")
	bin := fs.String("testdbd", "", "the daemon binary to measure; empty builds ./cmd/testdbd of the repository's root module")
	diskDir := fs.String("disk-dir", "/var/tmp", "a directory on disk (not tmpfs) for the disk-backed baseline's datadir")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	selected, err := selectPhases(*only)
	if err == nil && *engines != "" {
		_, err = selectEngines(*engines)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	// A reset ends the lease's sessions; the driver's note about each
	// closed idle connection it then replaces is expected, not news.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()

	b := &bench{quick: *quick, bin: *bin, diskDir: *diskDir, log: stderr, start: time.Now()}
	if *engines != "" {
		b.engines, _ = selectEngines(*engines)
		if b.engines == nil {
			b.engines = []EngineImage{}
		}
	}
	b.res = &Results{Format: formatVersion, Quick: *quick, Command: strings.TrimSpace("bench " + strings.Join(args, " ")),
		Started: b.start.UTC().Format(time.RFC3339)}
	err = b.run(ctx, selected)
	b.cleanup()
	if err == nil {
		err = write(*out, b.res)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	b.progress("wrote %s and %s", filepath.Join(*out, jsonFile), filepath.Join(*out, mdFile))
	return 0
}

// write writes the results and their report to dir.
func write(dir string, r *Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, jsonFile)
	if err := writeResults(path, r); err != nil {
		return err
	}
	return writeReport(path)
}

// runReport is `bench report`: the tables from the raw samples, nothing rerun.
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("w", false, "write the report next to the JSON file instead of printing it")
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
	md, err := reportOf(path)
	if err != nil {
		fmt.Fprintln(stderr, "bench report:", err)
		return 1
	}
	fmt.Fprint(stdout, md)
	return 0
}

// reportOf computes the report of a results file.
func reportOf(path string) (string, error) {
	r, err := readResults(path)
	if err != nil {
		return "", err
	}
	return renderMarkdown(r)
}

// writeReport writes the report of a results file next to it.
func writeReport(path string) error {
	md, err := reportOf(path)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(filepath.Dir(path), mdFile), []byte(md), 0o644)
}

// runWorkload is `bench workload`: the standard workload as files.
func runWorkload(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tables := fs.Int("tables", standardTables, "tables of the workload")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: bench workload [-tables N] DIR")
		return 2
	}
	dir := fs.Arg(0)
	src := standardSource(*tables)
	err := os.MkdirAll(filepath.Join(dir, "migrations"), 0o755)
	for _, f := range src.Files {
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "migrations", f.Name), f.Content, 0o644)
		}
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "seed.sql"), []byte(src.Seed), 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench workload:", err)
		return 1
	}
	return 0
}
