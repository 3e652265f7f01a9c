package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// envName is the environment variable that sets a flag: TESTDBD_<NAME> with
// dashes as underscores, e.g. --http-addr is TESTDBD_HTTP_ADDR.
func envName(flagName string) string {
	return "TESTDBD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then sets every flag not given on the command line
// from its TESTDBD_<NAME> environment variable, if present.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
			}
		}
	})
	return err
}

const serveUsage = `usage: testdbd serve [flags]

Runs the daemon: it starts MySQL or MariaDB servers with their data on
tmpfs, builds templates, keeps pools of databases ready and leases them,
serving a REST API (--http-addr) and a gRPC API (--grpc-addr) until
SIGTERM or SIGINT, which stop every server it started.

Flags (each also read from the environment variable named after it; a flag
on the command line wins):
`

// parseServeFlags parses `testdbd serve`'s flags and environment; -h
// prints the usage on stdout.
func parseServeFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := parseFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, serveUsage)
		printFlags(stdout, fs, envName, nil)
		return err
	case err != nil:
		return usageError{flagError(fs, err)}
	case fs.NArg() > 0:
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Arg(0))}
	}
	return nil
}

// byteSize is a flag value holding a size such as 512M, 4G or 1073741824.
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// parseBytes parses sizes like 1073741824, 512M, 512MB, 4G, 4GiB (binary units).
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit K, M, G or T", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
		"T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q (use K, M, G or T)", s, unit)
	}
	return int64(f * mult), nil
}

func formatBytes(n int64) string {
	switch {
	case n == 0:
		return "0"
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	}
	return strconv.FormatInt(n, 10)
}

// printFlags writes fs's flags in --name form, two lines each: the flag
// with its value's placeholder (and the environment variable that sets it,
// when env names one), then what it does and its default.
func printFlags(w io.Writer, fs *flag.FlagSet, env func(name string) string, only func(name string) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if only != nil && !only(f.Name) {
			return
		}
		placeholder, usage := flag.UnquoteUsage(f)
		switch {
		case isBool(f):
			placeholder = ""
		case placeholder == "duration":
			placeholder = "DURATION"
		case placeholder == "int":
			placeholder = "N"
		case placeholders[f.Name] != "":
			placeholder = placeholders[f.Name]
		default:
			placeholder = strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		}
		line := "  --" + f.Name
		if placeholder != "" {
			line += " " + placeholder
		}
		if env != nil {
			if e := env(f.Name); e != "" {
				line += "   (" + e + ")"
			}
		}
		fmt.Fprintln(w, line)
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "0s" {
			usage += " (default " + d + ")"
		}
		fmt.Fprintln(w, "        "+usage)
	})
}

// placeholders name the values of flags whose name does not say it.
var placeholders = map[string]string{
	"tls-ca": "FILE", "tls-cert": "FILE", "tls-key": "FILE", "id-file": "FILE", "seed-file": "FILE",
	"migrations-dir": "DIR", "state-dir": "DIR", "datadir-root": "DIR", "mysqld": "PATH",
	"http-addr": "ADDR", "grpc-addr": "ADDR", "memory-budget": "SIZE", "tmpfs-size": "SIZE", "buffer-pool": "SIZE",
	"worker": "KEY",
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	needsValue    = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	flagInText    = regexp.MustCompile(`(^|[ (])-([a-z][a-z0-9-]*)`)
	invalidValue  = regexp.MustCompile(`for --([a-z0-9-]+):`)
)

// flagError rewrites the flag package's messages in --flag style, with a
// hint for durations.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		return "unknown flag --" + m[1]
	}
	if m := needsValue.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + " needs a value"
	}
	msg = strings.Replace(msg, "for flag -", "for --", 1)
	msg = flagInText.ReplaceAllString(msg, "$1--$2")
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isDuration := g.Get().(time.Duration); isDuration {
					msg += ": durations look like 90s, 10m or 1h"
				}
			}
		}
	}
	return msg
}
