package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// restTerms are the REST API's own words, which a message printed by the
// command line must not ask its user for: the API's paths, its calls and
// the fields of its requests, read from the proto file.
func restTerms(t *testing.T) []string {
	t.Helper()
	proto, err := os.ReadFile(filepath.Join(repoRoot, "proto", "testdb", "v1", "testdb.proto"))
	if err != nil {
		t.Fatal(err)
	}
	terms := []string{"/v1/", `"migrations"`}
	for _, m := range regexp.MustCompile(`rpc (\w+)\(`).FindAllStringSubmatch(string(proto), -1) {
		terms = append(terms, m[1])
	}
	for _, body := range regexp.MustCompile(`message \w+Request \{([^}]*)\}`).FindAllStringSubmatch(string(proto), -1) {
		for _, f := range regexp.MustCompile(`(?m)^\s+(?:repeated )?[\w.]+ (\w+_\w+) = \d+;`).FindAllStringSubmatch(body[1], -1) {
			terms = append(terms, f[1])
		}
	}
	if len(terms) < 20 {
		t.Fatalf("read only %q from the proto file", terms)
	}
	return terms
}

// daemonStrings returns the string literals of the daemon's packages (not
// the clients', the command line's or the tests'), by file and line.
func daemonStrings(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	skip := map[string]bool{"client": true, "clients": true, "cmd": true, "bench": true, "api": true, "third_party": true,
		"internal": true, "tools": true, "examples": true, "dashboard": true}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		if d.IsDir() {
			if skip[rel] || rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err == nil {
					pos := fset.Position(lit.Pos())
					out[rel+":"+strconv.Itoa(pos.Line)+":"+strconv.Itoa(pos.Column)] = s
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCLIHintsCoverDaemonMessages checks that every message of the daemon
// that names a fix in the REST API's terms (a request field, a call, a
// path) reads in the command line's once cliHints has rewritten it: a new
// message fails here until it is worded for both, or said below to be
// out of the command line's reach.
func TestCLIHintsCoverDaemonMessages(t *testing.T) {
	// Not messages (exact strings), and messages the command line cannot
	// cause (by their start).
	notMessages := map[string]bool{
		"innodb_buffer_pool_size": true, "max_connections": true, // server settings (instance/settings.go)
		"testdbd_acquire_wait_seconds": true, "testdbd_leases_acquired_total": true, // metrics (stats/stats.go)
		"testdbd_leases_expired_total": true, "testdbd_acquire_exhausted_total": true,
		"AcquireLease duration, waiting included.": true, // a metric's help
		"/v1/templates/{name}:watch":               true, // a route
		"seed_sql":                                 true, // the seed's name in build errors ("failed to build: seed_sql failed: ...")
	}
	notForCLI := []string{
		"max_connections %d: use 0",  // the command line has no --max-connections
		"give either migrations_dir", // the command line sends one or the other
		"content_hash must be",       // the command line computes it (--hash-files)
	}
	verb := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
	terms := restTerms(t)
	checked := 0
	for where, s := range daemonStrings(t) {
		var named []string
		for _, term := range terms {
			if strings.Contains(s, term) {
				named = append(named, term)
			}
		}
		if len(named) == 0 || notMessages[s] || slicesContainsPrefix(notForCLI, s) {
			continue
		}
		checked++
		// The message as the daemon sends it, with sample values.
		msg := verb.ReplaceAllStringFunc(s, func(v string) string {
			switch v[len(v)-1] {
			case 'd':
				return "7"
			case 'q':
				return `"x"`
			}
			return "x"
		})
		got := cliHints(msg)
		for _, term := range named {
			if strings.Contains(got, term) {
				t.Errorf("%s: the daemon's %q reaches the command line as %q, which still says %s: "+
					"word it for the command line in cli_errors.go, or say here why the command line never gets it", where, s, got, term)
			}
		}
	}
	if checked < 15 {
		t.Errorf("only %d daemon messages name REST terms: is the scan still finding them?", checked)
	}
}

func slicesContainsPrefix(prefixes []string, s string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// TestCLIHintsLeaveUserTextAlone: the field names the daemon's messages
// open with are rewritten there only, not inside a migration's own error.
func TestCLIHintsLeaveUserTextAlone(t *testing.T) {
	for in, want := range map[string]string{
		"ttl_seconds 90000: use 1 to 86400 (0 means 600)":    "--ttl 90000s: use 1s to 86400s (without --ttl: 600s)",
		"wait_timeout_ms 900000: use 0 (30000) up to 600000": "--wait 900000ms: use up to 600000ms (without --wait: 30000ms)",
		"template app failed to build: migration 00002_x.sql: Error 1054 (42S22): Unknown column 'pool_size 3:' in 'field list'; fix the migrations and call EnsureTemplate again": "template app failed to build: migration 00002_x.sql: Error 1054 (42S22): Unknown column 'pool_size 3:' in 'field list'; fix the migrations and run testdbd template ensure again",
		"pool_size 100: use 0 (the default, 2) up to --max-databases=64": "--pool-size 100: use 0 (the default, 2) up to --max-databases=64",
	} {
		if got := cliHints(in); got != want {
			t.Errorf("cliHints(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
