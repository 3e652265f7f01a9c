package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/testdbd/testdbd/client"
)

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runTemplateEnsure(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("template ensure", "--name NAME (--migrations-dir DIR | --hash-files GLOB... -- COMMAND [ARGS...]) [flags]", stdout, stderr, "text", "json", "env")
	c.about = `Builds a template, or finds the build of the same content, and waits
for it, showing its progress (the migration it is on) on a terminal and as
plain lines otherwise.

With --migrations-dir: goose SQL migrations (files with "-- +goose Up"), or
golang-migrate's NNN_name.up.sql/.down.sql files. Without --upload the
daemon reads the directory on its own host (the path is made absolute
here); with --upload the files are sent.

With --hash-files and a command after "--": your own migrator builds it.
The files the patterns match (** matches any depth) are hashed; when no
build of that hash is live on the daemon or in its template cache, the
command runs against a scratch template database, with DB_CONNECTION,
DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME, DB_PASSWORD, DB_URL,
DATABASE_URL, MYSQL_HOST, MYSQL_PORT, MYSQL_DATABASE, MYSQL_USER,
MYSQL_PASSWORD and TESTDBD_BUILD_DSN in its environment; its output is
shown. It succeeding makes the database the template; it failing aborts
the build. E.g.:
  testdbd template ensure --name app --hash-files 'database/migrations/**' -- php artisan migrate --force
  testdbd template ensure --name app --hash-files '*/migrations/*.py' -- python3 manage.py migrate

--format env prints TESTDBD_TEMPLATE and TESTDBD_TEMPLATE_HASH exports,
and nothing when it fails: testdbd lease then pins its lease to this build.
In a script, assign them first, so that a failure stops it (eval "$(...)"
alone succeeds with nothing to evaluate):
  exports=$(testdbd template ensure ... --format env) || exit
  eval "$exports"`
	var cmdArgs []string
	for i, a := range args {
		if a == "--" {
			args, cmdArgs = args[:i], args[i+1:]
			break
		}
	}
	var req client.EnsureTemplateRequest
	var dir, seedFile string
	var upload bool
	var poolSize int
	var hashFiles stringList
	var ttl time.Duration
	c.fs.StringVar(&req.Name, "name", "", "the template's name (required)")
	c.fs.StringVar(&dir, "migrations-dir", "", "directory of goose or golang-migrate SQL migrations")
	c.fs.Var(&hashFiles, "hash-files", "files that define the schema your command builds, as a glob (repeatable; ** matches any depth)")
	c.fs.DurationVar(&ttl, "build-timeout", 0, "time limit of the build (default the daemon's --build-timeout)")
	c.fs.BoolVar(&upload, "upload", false, "send the files with the request instead of the path (for a daemon on another host or in a container)")
	c.fs.StringVar(&seedFile, "seed-file", "", "SQL file run after the migrations")
	c.fs.StringVar(&req.Engine, "engine", "", "build on this engine: mariadb, mysql, or with a version, e.g. mysql-9.7 (default the daemon's default engine)")
	c.fs.IntVar(&poolSize, "pool-size", 0, "ready databases to keep for the template (default the daemon's --pool-size)")
	c.fs.BoolVar(&req.Async, "async", false, "return while the template is still building (testdbd template wait NAME waits for it)")
	if _, err := c.parse(args); err != nil {
		return err
	}
	external := len(hashFiles) > 0 || len(cmdArgs) > 0
	switch {
	case req.Name == "":
		return usageError{"template ensure needs --name"}
	case external && (len(hashFiles) == 0 || len(cmdArgs) == 0):
		return usageError{"template ensure with your own migrator needs both --hash-files and the command after \"--\""}
	case external && (dir != "" || upload || seedFile != ""):
		return usageError{"--hash-files builds with your command: leave out --migrations-dir, --upload and --seed-file"}
	case !external && dir == "":
		return usageError{"template ensure needs --migrations-dir, or --hash-files and a command after \"--\""}
	case ttl < 0:
		return usageError{"--build-timeout must not be negative"}
	}
	req.PoolSize = int32(poolSize)
	req.BuildTimeoutSeconds = int32((ttl + time.Second - 1) / time.Second)
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	progress := newProgress(stderr, c.format == "text")
	var t *client.Template
	if external {
		t, err = ensureExternal(ctx, cl, req, hashFiles, cmdArgs, stdout, stderr, progress)
	} else {
		t, err = ensureMigrations(ctx, cl, req, dir, seedFile, upload, progress)
	}
	progress.end()
	if err != nil {
		return err
	}
	return printEnsured(c, t)
}

// ensureMigrations is template ensure with a directory of migrations: an
// asynchronous ensure, then the build's progress.
func ensureMigrations(ctx context.Context, cl *client.Client, req client.EnsureTemplateRequest, dir, seedFile string, upload bool, p *progress) (*client.Template, error) {
	if upload {
		files, err := client.ReadMigrations(dir)
		if err != nil {
			return nil, err
		}
		req.Migrations = files
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		req.MigrationsDir = abs // the daemon's working directory is not ours
	}
	if seedFile != "" {
		b, err := os.ReadFile(seedFile)
		if err != nil {
			return nil, fmt.Errorf("--seed-file: %w", err)
		}
		req.SeedSQL = string(b)
	}
	async := req.Async
	req.Async = true
	t, err := cl.EnsureTemplate(ctx, req)
	if err != nil || async || t.State != client.TemplateBuilding {
		return t, err
	}
	return cl.WatchTemplate(ctx, req.Name, t.Hash, p.show)
}

// ensureExternal is template ensure with the caller's own migrator.
func ensureExternal(ctx context.Context, cl *client.Client, req client.EnsureTemplateRequest, patterns, cmdArgs []string,
	stdout, stderr io.Writer, p *progress) (*client.Template, error) {
	hash, err := client.HashFiles(patterns...)
	if err != nil {
		return nil, usageError{"--hash-files: " + err.Error()}
	}
	begun, err := cl.BeginTemplateBuild(ctx, client.BeginTemplateBuildRequest{
		Name: req.Name, ContentHash: hash, Engine: req.Engine, PoolSize: req.PoolSize, TTLSeconds: req.BuildTimeoutSeconds,
	})
	if err != nil {
		return nil, err
	}
	t := &begun.Template
	if begun.Build == nil {
		p.note(fmt.Sprintf("template %s: a build of these files is %s (%s); %s not run", req.Name,
			templateState(t.State), dash(t.Source), strings.Join(cmdArgs, " ")))
		if t.State != client.TemplateBuilding || req.Async {
			return t, nil
		}
		return cl.WatchTemplate(ctx, req.Name, t.Hash, p.show)
	}
	b := begun.Build
	p.note(fmt.Sprintf("template %s: running %s against %s on %s:%d", req.Name, strings.Join(cmdArgs, " "), b.Database, b.Host, b.Port))
	cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
	// The command's output goes to stderr: stdout is for the result
	// (--format env is read by eval).
	cmd.Stdout, cmd.Stderr, cmd.Stdin = stderr, stderr, nil
	cmd.Env = append(os.Environ(), buildEnv(b)...)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		reason := fmt.Sprintf("%s: %v", strings.Join(cmdArgs, " "), err)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, aerr := cl.AbortTemplateBuild(actx, req.Name, t.Hash, reason); aerr != nil {
			return nil, fmt.Errorf("%s; aborting the build failed too: %w", reason, aerr)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("the build command failed (%w); the build was aborted", err)
		}
		return nil, fmt.Errorf("the build command could not run: %w; the build was aborted", err)
	}
	p.note(fmt.Sprintf("template %s: %s done in %s; capturing", req.Name, cmdArgs[0], time.Since(start).Round(time.Millisecond)))
	return cl.FinishTemplateBuild(ctx, req.Name, t.Hash)
}

// buildEnv is the environment of an external build's command: what
// frameworks read for their database connection.
func buildEnv(b *client.ExternalBuild) []string {
	port := strconv.Itoa(int(b.Port))
	return []string{
		"DB_CONNECTION=mysql", "DB_HOST=" + b.Host, "DB_PORT=" + port, "DB_DATABASE=" + b.Database,
		"DB_USERNAME=" + b.User, "DB_PASSWORD=" + b.Password, "DB_URL=" + b.URL, "DATABASE_URL=" + b.URL,
		"MYSQL_HOST=" + b.Host, "MYSQL_PORT=" + port, "MYSQL_DATABASE=" + b.Database,
		"MYSQL_USER=" + b.User, "MYSQL_PASSWORD=" + b.Password, "TESTDBD_BUILD_DSN=" + b.DSN,
	}
}

// printEnsured prints the template an ensure ended with.
func printEnsured(c *cli, t *client.Template) error {
	switch c.format {
	case "json":
		return c.printJSON(t)
	case "env":
		_, err := fmt.Fprintf(c.stdout, "export TESTDBD_TEMPLATE=%s\nexport TESTDBD_TEMPLATE_HASH=%s\n", shellQuote(t.Name), shellQuote(t.Hash))
		return err
	}
	if t.State != client.TemplateReady {
		_, err := fmt.Fprintf(c.stdout, "template %s is %s (hash %.12s)\n", t.Name, templateState(t.State), t.Hash)
		return err
	}
	how := "built in " + ms(t.Build.TotalMs) + " ms"
	if t.Source == "cache" {
		how = "restored from the cache in " + ms(t.Build.TotalMs) + " ms"
	}
	_, err := fmt.Fprintf(c.stdout, "template %s ready: %s, %s, %s, %s, %s; goose version %d; hash %.12s; %s (%d ready, %d leased)\n",
		t.Name, count(t.Tables, "table"), count(t.Views, "view"), count(t.Triggers, "trigger"), count(t.Routines, "routine"),
		count(t.Events, "event"), t.Version, t.Hash, how, t.Pool.Ready, t.Pool.Leased)
	return err
}

func runTemplateWait(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("template wait", "NAME [--hash HASH] [flags]", stdout, stderr, "text", "json", "env")
	c.about = `Waits for a template's build (after template ensure --async), showing its
progress, and prints the template; exits 1 when the build failed.`
	hash := c.fs.String("hash", "", "the build to wait for (default the name's current build)")
	pos, err := c.parse(args, "NAME")
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	p := newProgress(stderr, c.format == "text")
	t, err := cl.WatchTemplate(ctx, pos[0], *hash, p.show)
	p.end()
	if err != nil {
		return err
	}
	return printEnsured(c, t)
}

// progress shows a build's progress on w: one line rewritten in place on a
// terminal, plain lines otherwise (at most one a second while migrating).
type progress struct {
	w        io.Writer
	tty      bool
	enabled  bool
	open     bool // a line is being rewritten
	last     string
	lastTime time.Time
}

func newProgress(w io.Writer, enabled bool) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, enabled: enabled}
}

// show is WatchTemplate's callback.
func (p *progress) show(t *client.Template) {
	if !p.enabled {
		return
	}
	pr := t.Progress
	line := fmt.Sprintf("template %s: %s", t.Name, pr.Phase)
	if pr.Phase == "migrating" && pr.Steps > 0 {
		line = fmt.Sprintf("template %s: migrating %d/%d %s", t.Name, pr.Step, pr.Steps, pr.Migration)
	}
	elapsed := fmt.Sprintf(" (%.1fs)", pr.ElapsedMs/1000)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s%s", line, elapsed)
		p.open = true
		return
	}
	phaseChanged := !strings.HasPrefix(p.last, fmt.Sprintf("template %s: %s", t.Name, pr.Phase))
	if line != p.last && (phaseChanged || time.Since(p.lastTime) >= time.Second) {
		fmt.Fprintln(p.w, line+elapsed)
		p.last, p.lastTime = line, time.Now()
	}
}

// note prints a line of its own.
func (p *progress) note(s string) {
	if !p.enabled {
		return
	}
	p.end()
	fmt.Fprintln(p.w, s)
}

// end finishes a line being rewritten.
func (p *progress) end() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}
