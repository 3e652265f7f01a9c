package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
	"github.com/testdbd/testdbd/internal/testcert"
	"github.com/testdbd/testdbd/internal/testenv"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

// cliResult is what one run of the CLI printed and returned.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs the testdbd binary in dir with env added to the test's
// environment.
func runCLI(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cliResult{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// pathWithBinary is a PATH that finds the test's testdbd binary first.
func pathWithBinary() string {
	return "PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestCLI runs the client commands against a real daemon, the README's
// eval flow included.
func TestCLI(t *testing.T) {
	d := startDaemon(t, testenv.StateDir(t))
	env := []string{"TESTDBD_ADDR=" + d.httpAddr, pathWithBinary()}

	// A relative --migrations-dir is the caller's, not the daemon's: the
	// daemon runs in another directory.
	r := runCLI(t, repoRoot, env, "template", "ensure", "--name", "app", "--migrations-dir", "examples/migrations")
	if r.code != 0 || !strings.Contains(r.stdout, "template app ready: 6 tables") {
		t.Fatalf("template ensure: %+v", r)
	}
	// A seed of its own gives the uploaded template its own content hash.
	seed := filepath.Join(t.TempDir(), "seed.sql")
	if err := os.WriteFile(seed, []byte("INSERT INTO users (email, name) VALUES ('seed@example.com', 'Seed');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, repoRoot, env, "template", "ensure", "--name", "uploaded", "--migrations-dir", "examples/migrations", "--upload", "--seed-file", seed, "--format", "json")
	var tpl client.Template
	if err := json.Unmarshal([]byte(r.stdout), &tpl); r.code != 0 || err != nil || tpl.State != client.TemplateReady || tpl.Tables != 6 {
		t.Fatalf("template ensure --upload --seed-file: %+v, %v", r, err)
	}
	r = runCLI(t, repoRoot, env, "lease", "--template", "uploaded", "--format", "env")
	if r.code != 0 {
		t.Fatalf("lease of uploaded: %+v", r)
	}
	leaseEnv := r.stdout
	t.Run("the seed ran", func(t *testing.T) {
		needMariaDBClient(t)
		seeded := exec.Command("bash", "-c", leaseEnv+`mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" "$DB_DATABASE" -N -e "select count(*) from users where email = 'seed@example.com'"`)
		seeded.Env = append(os.Environ(), env...)
		if out, err := seeded.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "1\n") {
			t.Errorf("the seed did not run: %v\n%s", err, out)
		}
	})
	release := exec.Command("bash", "-c", leaseEnv+`testdbd release "$TESTDBD_LEASE_ID"`)
	release.Env = append(os.Environ(), env...)
	if out, err := release.CombinedOutput(); err != nil {
		t.Fatalf("release: %v\n%s", err, out)
	}

	t.Run("README quickstart, verbatim", func(t *testing.T) {
		needMariaDBClient(t)
		// The README's shell block, run as written in a directory laid out
		// like the repository after make run: bin/testdbd and examples/.
		dir := t.TempDir()
		examples, _ := filepath.Abs(filepath.Join(repoRoot, "examples"))
		if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(os.Symlink(binary, filepath.Join(dir, "bin", "testdbd")), os.Symlink(examples, filepath.Join(dir, "examples"))); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-c", "set -eu\n"+readmeShellBlock(t))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{"template app ready", "\n1\n1\n", "reset l-", "released l-"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("README eval flow", func(t *testing.T) {
		needMariaDBClient(t)
		script := `set -eu
eval "$(testdbd lease --template app --format env)"
mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" "$DB_DATABASE" -e 'select 1'
test "$DB_READ_HOST" = "$DB_HOST" && test "$DB_WRITE_HOST" = "$DB_HOST"
mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" "$DB_DATABASE" -N -e 'select count(*) from users'
testdbd release "$TESTDBD_LEASE_ID"
`
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		lines := strings.Fields(string(out))
		if len(lines) < 3 || lines[0] != "1" || lines[1] != "1" || lines[2] != "3" || !strings.Contains(string(out), "released l-") {
			t.Errorf("output:\n%s", out)
		}
	})

	t.Run("lease formats, reset, renew, release", func(t *testing.T) {
		r := runCLI(t, ".", env, "lease", "--template", "app", "--strategy", "truncate", "--ttl", "90s", "--worker", "cli-test", "--wait", "5s")
		var l client.Lease
		if err := json.Unmarshal([]byte(r.stdout), &l); r.code != 0 || err != nil {
			t.Fatalf("lease: %+v, %v", r, err)
		}
		if l.Strategy != client.StrategyTruncate || l.TTLSeconds != 90 || l.Worker != "cli-test" {
			t.Errorf("lease: %+v", l)
		}
		cfg, err := mysql.ParseDSN(l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		connector, _ := mysql.NewConnector(cfg)
		db := sql.OpenDB(connector)
		defer db.Close()
		if _, err := db.Exec("DELETE FROM comments"); err != nil {
			t.Fatal(err)
		}
		// Flags after the lease id, and the lease's strategy overridden.
		r = runCLI(t, ".", env, "reset", l.ID, "--strategy", "snapshot")
		if r.code != 0 || !strings.Contains(r.stdout, "reset "+l.ID+" by snapshot") || !strings.Contains(r.stdout, "restored comments") {
			t.Errorf("reset: %+v", r)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM comments").Scan(&n); err != nil || n != 1 {
			t.Errorf("comments after the reset: %d, %v", n, err)
		}
		r = runCLI(t, ".", env, "reset", "--format", "json", l.ID)
		var rep client.ResetReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil || rep.Strategy != client.StrategyTruncate {
			t.Errorf("reset --format json: %+v, %v", r, err)
		}
		if r := runCLI(t, ".", env, "renew", l.ID, "--ttl", "5m"); r.code != 0 || !strings.Contains(r.stdout, "renewed "+l.ID) {
			t.Errorf("renew: %+v", r)
		}
		// Times carry their zone: the offset from UTC, or Z in UTC.
		for tz, zone := range map[string]string{"UTC": "Z", "Asia/Kolkata": "+05:30"} {
			zoned := regexp.MustCompile(`until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d` + regexp.QuoteMeta(zone) + `\b`)
			for _, args := range [][]string{{"renew", l.ID}, {"status", l.ID}} {
				if r := runCLI(t, ".", append([]string{"TZ=" + tz}, env...), args...); r.code != 0 || !zoned.MatchString(r.stdout) {
					t.Errorf("TZ=%s %s: want the time with %s: %+v", tz, strings.Join(args, " "), zone, r)
				}
			}
		}
		r = runCLI(t, ".", env, "status")
		for _, want := range []string{"INSTANCES", "mariadb", "TEMPLATES", "uploaded", "LEASES", l.ID, "cli-test", "RESETS (ms)", "snapshot", "truncate", "acquire"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("status lacks %q:\n%s", want, r.stdout)
			}
		}
		r = runCLI(t, ".", env, "status", "--format", "json")
		var st struct {
			Instances []client.Instance `json:"instances"`
			Stats     client.Stats      `json:"stats"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Instances) == 0 || st.Stats.LeasesActive < 1 {
			t.Errorf("status --format json: %v\n%s", err, r.stdout)
		}
		if r := runCLI(t, ".", env, "release", l.ID); r.code != 0 || !strings.Contains(r.stdout, "released "+l.ID) {
			t.Errorf("release: %+v", r)
		}
		for _, format := range []string{"dsn", "url", "json"} {
			idFile := filepath.Join(t.TempDir(), "lease-id")
			r := runCLI(t, ".", env, "lease", "--template", "app", "--format", format, "--id-file", idFile)
			out := strings.TrimSpace(r.stdout)
			if r.code != 0 || (format != "json" && strings.Contains(out, "\n")) || (format == "dsn" && !strings.Contains(out, "@tcp(")) || (format == "url" && !strings.HasPrefix(out, "mysql://")) {
				t.Errorf("--format %s: %+v", format, r)
			}
			b, err := os.ReadFile(idFile)
			id := strings.TrimSpace(string(b))
			if err != nil || !strings.HasPrefix(id, "l-") {
				t.Fatalf("--id-file: %q, %v", b, err)
			}
			// dsn and url have no room for the id on stdout: it is on stderr.
			if says := "testdbd release " + id; format != "json" && !strings.Contains(r.stderr, says) {
				t.Errorf("--format %s: stderr %q does not say %q", format, r.stderr, says)
			}
			if until := regexp.MustCompile(`until \d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)\)`); format != "json" && !until.MatchString(r.stderr) {
				t.Errorf("--format %s: stderr %q does not say until when, with the zone", format, r.stderr)
			}
			if r := runCLI(t, ".", env, "release", id); r.code != 0 {
				t.Errorf("release %s: %+v", id, r)
			}
		}
	})

	t.Run("errors read like the daemon wrote them", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			env  []string
			args []string
			code int
			says string
		}{
			{"unknown template", env, []string{"lease", "--template", "nope"}, 1, `testdbd: no template named "nope": create it with: testdbd template ensure --name nope --migrations-dir DIR`},
			{"ended lease", env, []string{"reset", "l-0000000000000000"}, 1, `testdbd: no lease "l-0000000000000000": it never existed or ended long ago: lease one with: testdbd lease --template NAME`},
			{"broken migrations", env, []string{"template", "ensure", "--name", "bad", "--migrations-dir", "/nonexistent"}, 1, "the path is read on the daemon's host; pass --upload"},
			{"no daemon", []string{"TESTDBD_ADDR=127.0.0.1:1"}, []string{"status"}, 1, "cannot reach the testdbd daemon at http://127.0.0.1:1 (connection refused): " +
				"is it running? Start it with `testdbd serve`, or give its REST address with --addr or TESTDBD_ADDR\n"},
			{"the gRPC port", []string{"TESTDBD_ADDR=" + d.grpcAddr}, []string{"lease", "--template", "app"}, 1, "testdbd: " + d.grpcAddr +
				" answers gRPC, not REST: give the daemon's REST address instead with --addr or TESTDBD_ADDR, by default 127.0.0.1:8080"},
			{"a request field", env, []string{"lease", "--template", "app", "--ttl", "1000h"}, 1, "testdbd: --ttl 3600000s: use 1s to 86400s (without --ttl: 600s)"},
			{"a stale hash", env, []string{"lease", "--template", "app", "--template-hash", "abc"}, 1, "or lease without --template-hash (and TESTDBD_TEMPLATE_HASH) to take the current one"},
			{"missing flag", env, []string{"lease"}, 2, "testdbd: lease needs --template"},
			{"bad strategy", env, []string{"lease", "--template", "app", "--strategy", "fast"}, 2, "use truncate, snapshot or rollback"},
			{"bad format", env, []string{"lease", "--template", "app", "--format", "yaml"}, 2, "use json, env, dsn, url"},
			{"missing argument", env, []string{"release"}, 2, "release needs LEASE_ID"},
			{"too long a wait", env, []string{"lease", "--template", "app", "--wait", "1000h"}, 2, "testdbd: --wait 1000h0m0s: use at most 596h"},
			{"a longer wait than the daemon's", env, []string{"lease", "--template", "app", "--wait", "500h"}, 1, "testdbd: --wait 1800000000ms: use up to"},
			{"bad address", []string{"TESTDBD_ADDR=grpc://x"}, []string{"status"}, 2, "want host:port"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := runCLI(t, ".", tc.env, tc.args...)
				if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tc.code, tc.says)
				}
				for _, noise := range []string{"rpc error", "Post \"", "Get \"", "dial tcp", "%!", "/v1/", "EnsureTemplate", "AcquireLease", "migrations_dir",
					"ttl_seconds", "template_hash", "malformed", `\x00`, "TESTDBD_ADDR for the test helpers"} {
					if strings.Contains(r.stderr, noise) {
						t.Errorf("stderr has Go noise %q: %s", noise, r.stderr)
					}
				}
				if r.stdout != "" {
					t.Errorf("stdout %q on failure", r.stdout)
				}
			})
		}
	})
}

// needMariaDBClient skips a test that runs the mariadb command line client
// when it is not installed.
func needMariaDBClient(t *testing.T) {
	t.Helper()
	testenv.NeedCommand(t, "mariadb", "scripts/install-deps.sh server (make run and make test run it)")
}

// readmeShellBlock returns the README's "A database of your own" shell
// block, which must contain the eval flow.
func readmeShellBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "A database of your own")
	if ok {
		_, rest, ok = strings.Cut(rest, "```sh\n")
	}
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no \"A database of your own\" shell block")
	}
	for _, line := range []string{
		`eval "$(testdbd lease --template app --format env)"`,
		`mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USERNAME" -p"$DB_PASSWORD" "$DB_DATABASE" -e 'select 1'`,
	} {
		if !strings.Contains(block, line) {
			t.Errorf("the README's shell block lacks %s", line)
		}
	}
	return block
}

// TestCLIToken checks --token and TESTDBD_TOKEN against a daemon that
// requires one.
func TestCLIToken(t *testing.T) {
	d := startDaemon(t, testenv.StateDir(t), "--token", "s3cret")
	addr := "TESTDBD_ADDR=" + d.httpAddr
	r := runCLI(t, ".", []string{addr}, "status")
	if r.code != 1 || !strings.Contains(r.stderr, "set TESTDBD_TOKEN (or pass --token)") {
		t.Errorf("no token: %+v", r)
	}
	if r := runCLI(t, ".", []string{addr, "TESTDBD_TOKEN=s3cret"}, "status"); r.code != 0 {
		t.Errorf("TESTDBD_TOKEN: %+v", r)
	}
	if r := runCLI(t, ".", []string{addr, "TESTDBD_TOKEN=wrong"}, "status", "--token", "s3cret"); r.code != 0 {
		t.Errorf("--token beats TESTDBD_TOKEN: %+v", r)
	}
}

func TestCLIParsesFlagsAroundArguments(t *testing.T) {
	t.Setenv("TESTDBD_ADDR", "db.test:8080")
	t.Setenv("TESTDBD_STRATEGY", "rollback") // the daemon's --strategy: not the client's
	t.Setenv("TESTDBD_FORMAT", "json")
	for _, args := range [][]string{
		{"l-1", "--strategy", "truncate"},
		{"--strategy", "truncate", "l-1"},
		{"--format=json", "l-1", "--strategy=truncate"},
	} {
		c := newCLI("reset", "LEASE_ID ", io.Discard, io.Discard, "text", "json")
		strategy := c.fs.String("strategy", "", "")
		pos, err := c.parse(args, "LEASE_ID")
		if err != nil || len(pos) != 1 || pos[0] != "l-1" || *strategy != "truncate" || c.addr != "db.test:8080" {
			t.Errorf("%q: pos %q, strategy %q, addr %q, %v", args, pos, *strategy, c.addr, err)
		}
	}
	c := newCLI("reset", "LEASE_ID ", io.Discard, io.Discard, "text", "json")
	strategy := c.fs.String("strategy", "", "")
	if _, err := c.parse([]string{"l-1"}, "LEASE_ID"); err != nil || *strategy != "" || c.format != "text" {
		t.Errorf("the client commands read TESTDBD_STRATEGY (%q) or TESTDBD_FORMAT (%q), %v; they must read only the connection settings", *strategy, c.format, err)
	}
	c = newCLI("reset", "LEASE_ID ", io.Discard, io.Discard)
	if _, err := c.parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// TestHelp: every command's help is on stdout, exits 0, writes flags as
// --flag and names the environment variables it reads.
func TestHelp(t *testing.T) {
	singleDash := regexp.MustCompile(`(^|[\s(,])-[a-z][a-z-]+`)
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"help"}, {"help", "lease"}, {"help", "template"}, {"serve", "-h"}, {"serve", "--help"},
		{"template", "-h"}, {"template", "ensure", "-h"}, {"template", "list", "-h"}, {"template", "get", "-h"},
		{"template", "delete", "--help"}, {"lease", "-h"}, {"reset", "-h"}, {"renew", "-h"}, {"release", "-h"},
		{"status", "-h"}, {"version", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			out := stdout.String()
			if code != 0 || stderr.Len() != 0 || !strings.Contains(out, "usage") && !strings.Contains(out, "Usage") {
				t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr.String(), out)
			}
			if args[0] != "version" && !strings.Contains(out, "TESTDBD_") {
				t.Errorf("help does not name the environment variables:\n%s", out)
			}
			if m := singleDash.FindString(out); m != "" {
				t.Errorf("help writes a flag as %q; want --flag:\n%s", m, out)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"lease", "--bogus"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "unknown flag --bogus") {
		t.Errorf("unknown flag: %d %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"serve", "--warm"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--warm needs a value") {
		t.Errorf("serve --warm: %d %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"lease", "--ttl", "5x"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "durations look like") {
		t.Errorf("lease --ttl 5x: %d %q", code, stderr.String())
	}
}

func TestCLIHints(t *testing.T) {
	for daemon, want := range map[string]string{
		`no template named "app": create it with EnsureTemplate (POST /v1/templates)`:       `no template named "app": create it with: testdbd template ensure --name app --migrations-dir DIR`,
		`no lease "l-1": acquire one with AcquireLease (POST /v1/leases)`:                   `no lease "l-1": lease one with: testdbd lease --template NAME`,
		`template app failed to build: x; fix the migrations and call EnsureTemplate again`: `template app failed to build: x; fix the migrations and run testdbd template ensure again`,
		`pool_size 99: use 0 (the default, 2) up to --max-databases=64`:                     `--pool-size 99: use 0 (the default, 2) up to --max-databases=64`,
	} {
		if got := cliHints(daemon); got != want {
			t.Errorf("cliHints(%q)\n = %q\nwant %q", daemon, got, want)
		}
	}
}

func TestLeaseEnv(t *testing.T) {
	l := &client.Lease{ID: "l-1", Host: "10.0.0.7", Port: 3307, Database: "tdb_x_w1", User: "u", Password: "p'w$d\"`x",
		URL: "mysql://u:p%27w$d%22%60x@10.0.0.7:3307/tdb_x_w1"}
	got := leaseEnv(l)
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || !strings.HasPrefix(line, "export ") {
			t.Fatalf("line %q is not an export", line)
		}
		v, err := shellUnquote(value)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		vars[name] = v
	}
	for name, want := range map[string]string{
		"DB_CONNECTION": "mysql", "DB_HOST": "10.0.0.7", "DB_PORT": "3307", "DB_DATABASE": "tdb_x_w1",
		"DB_USERNAME": "u", "DB_PASSWORD": l.Password, "DB_READ_HOST": "10.0.0.7", "DB_WRITE_HOST": "10.0.0.7",
		"DB_URL": l.URL, "DATABASE_URL": l.URL, "TESTDBD_LEASE_ID": "l-1",
	} {
		if vars[name] != want {
			t.Errorf("%s = %q, want %q", name, vars[name], want)
		}
	}
}

// TestShellQuoteInBash evaluates quoted values in a real shell.
func TestShellQuoteInBash(t *testing.T) {
	values := []string{"", "plain", "it's", "'", "''", `a"b`, "$(echo pwned)", "`id`", "back\\slash", "new\nline", "tab\there",
		"*", "~", "!event", "; rm -rf /", "ünï©ødé", "-n", "a b  c", "$HOME", "%s"}
	var script strings.Builder
	for i, v := range values {
		script.WriteString("export V" + string(rune('A'+i)) + "=" + shellQuote(v) + "\n")
		script.WriteString("printf '%s\\0' \"$V" + string(rune('A'+i)) + "\"\n")
	}
	out, err := exec.Command("bash", "-c", script.String()).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(values) {
		t.Fatalf("got %d values back, want %d: %q", len(got), len(values), got)
	}
	for i, v := range values {
		if got[i] != v {
			t.Errorf("%q came back as %q", v, got[i])
		}
	}
}

// FuzzShellQuote checks that any string survives quoting, read back by the
// POSIX rules for single-quoted words.
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "'", "a'b'c", "'''", `\'`, "$x", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := shellQuote(s)
		back, err := shellUnquote(q)
		if err != nil || back != s {
			t.Errorf("shellQuote(%q) = %s, read back as %q, %v", s, q, back, err)
		}
	})
}

// shellUnquote reads a word made of single-quoted parts and \' escapes, as
// a POSIX shell does.
func shellUnquote(w string) (string, error) {
	var b strings.Builder
	for len(w) > 0 {
		switch {
		case strings.HasPrefix(w, `\'`):
			b.WriteByte('\'')
			w = w[2:]
		case w[0] == '\'':
			end := strings.IndexByte(w[1:], '\'')
			if end < 0 {
				return "", errors.New("unterminated quote")
			}
			b.WriteString(w[1 : 1+end])
			w = w[2+end:]
		default:
			return "", errors.New("unquoted text: " + w)
		}
	}
	return b.String(), nil
}

// TestCLITLS runs the client commands against a daemon serving TLS with a
// self-signed certificate, and a token, both from the environment.
func TestCLITLS(t *testing.T) {
	cert := testcert.Write(t)
	t.Setenv("TESTDBD_TOKEN", "s3cret") // the daemon's and the CLI's
	d := startDaemon(t, testenv.StateDir(t), "--tls-cert", cert.Cert, "--tls-key", cert.Key)
	for _, tc := range []struct {
		name string
		env  []string
		code int
		says string
	}{
		{"https with the CA", []string{"TESTDBD_ADDR=https://" + d.httpAddr, "TESTDBD_TLS_CA=" + cert.Cert}, 0, "INSTANCES"},
		{"the CA makes https the default", []string{"TESTDBD_ADDR=" + d.httpAddr, "TESTDBD_TLS_CA=" + cert.Cert}, 0, "INSTANCES"},
		{"no CA", []string{"TESTDBD_ADDR=https://" + d.httpAddr}, 1, "give the CA certificate that signed it with --tls-ca or TESTDBD_TLS_CA"},
		{"plain http", []string{"TESTDBD_ADDR=http://" + d.httpAddr}, 1, "serves HTTPS: give its address as https://" + d.httpAddr},
		{"a CA file that is not one", []string{"TESTDBD_ADDR=" + d.httpAddr, "TESTDBD_TLS_CA=" + cert.Key}, 2, "--tls-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, ".", tc.env, "status")
			out := r.stdout + r.stderr
			if r.code != tc.code || !strings.Contains(out, tc.says) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s", r.code, tc.code, tc.says, out)
			}
		})
	}
}

// TestServeRefusesExposedAddressWithoutToken: before starting anything.
func TestServeRefusesExposedAddressWithoutToken(t *testing.T) {
	r := runCLI(t, ".", []string{"TESTDBD_TOKEN="}, "serve", "--state-dir", testenv.StateDir(t), "--http-addr", "0.0.0.0:0", "--grpc-addr", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, "--insecure") || !strings.Contains(r.stderr, "TESTDBD_TOKEN") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
