package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/testdbd/testdbd/client"
)

// The client commands talk to a daemon over its REST API, at --addr
// (TESTDBD_ADDR), by default the daemon's default --http-addr. Of the
// environment they read only the connection settings (connEnv), so that
// the daemon's own variables (TESTDBD_STRATEGY, ...) in the same
// environment change nothing here.

// cliUsage lists the client commands; main's usage text includes it.
const cliUsage = `  testdbd template ensure --name NAME --migrations-dir DIR [--upload] [--seed-file FILE]
                            build a template from goose migrations (or find it by content)
  testdbd template list | get NAME | delete NAME [--force]
  testdbd lease --template NAME [--strategy S] [--ttl 10m] [--worker KEY] [--wait 30s]
                [--format json|env|dsn|url] [--id-file FILE]
                            lease a database; --format env prints shell exports:
                            eval "$(testdbd lease --template app --format env)"
  testdbd reset LEASE_ID [--strategy S]    reset now and print the report
  testdbd renew LEASE_ID [--ttl D]         extend the lease's time to live
  testdbd release LEASE_ID                 give the database back
  testdbd status                           instances, templates, leases, reset timings

Client commands take --addr (default 127.0.0.1:8080, the daemon's REST
address; http:// or https:// optional), --token and --tls-ca, also read
from TESTDBD_ADDR, TESTDBD_TOKEN and TESTDBD_TLS_CA. --format json prints
what the API answered. Strategies: truncate, snapshot (the daemon's
default) or rollback. Exit status: 0 done, 1 the call failed, 2 bad usage.
`

// clientCommands are the commands runClientCommand handles.
var clientCommands = map[string]bool{
	"template": true, "lease": true, "reset": true, "renew": true, "release": true, "status": true,
}

// clientCommandNames lists them in the order of the usage text.
var clientCommandNames = []string{"template", "lease", "reset", "renew", "release", "status"}

// connEnv are the connection flags of the client commands and the
// environment variables that set them: the only variables they read.
var connEnv = map[string]string{"addr": "TESTDBD_ADDR", "token": "TESTDBD_TOKEN", "tls-ca": "TESTDBD_TLS_CA"}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// cli is one client command being run.
type cli struct {
	name     string // e.g. "template ensure"
	synopsis string // what follows the name in the usage line, e.g. "LEASE_ID [flags]"
	about    string // what the command does, for -h
	fs       *flag.FlagSet
	formats  []string // the --format values allowed; the first is the default
	addr     string
	token    string
	tlsCA    string
	format   string
	stdout   io.Writer
	stderr   io.Writer
}

// newCLI starts a command whose usage line is "testdbd <name> <synopsis>"
// and whose --format takes formats, the first being the default.
func newCLI(name, synopsis string, stdout, stderr io.Writer, formats ...string) *cli {
	c := &cli{name: name, synopsis: synopsis, formats: formats, stdout: stdout, stderr: stderr}
	c.fs = flag.NewFlagSet(name, flag.ContinueOnError)
	// Mistakes are reported once, by runClientCommand; -h prints the usage.
	c.fs.SetOutput(io.Discard)
	c.fs.Usage = func() {}
	c.fs.StringVar(&c.addr, "addr", client.DefaultAddr, "the daemon's REST address: host:port, http://host:port or https://host:port")
	c.fs.StringVar(&c.token, "token", "", "bearer token of a daemon that requires one; prefer TESTDBD_TOKEN, since ps shows command lines")
	c.fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM file of the CA certificate that signed the daemon's TLS certificate; an address without a scheme then means https://")
	if len(formats) > 0 {
		c.fs.StringVar(&c.format, "format", formats[0], "what to print: "+strings.Join(formats, ", "))
	}
	return c
}

// parse parses flags given before, between and after the positional
// arguments, then the connection settings from the environment, and checks
// the number of positional arguments and the format.
func (c *cli) parse(args []string, positional ...string) ([]string, error) {
	var pos []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.usage()
				return nil, err
			}
			return nil, usageError{flagError(c.fs, err)}
		}
		args = c.fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, env := range connEnv {
		if v, ok := os.LookupEnv(env); ok && !set[name] {
			if err := c.fs.Set(name, v); err != nil {
				return nil, usageError{fmt.Sprintf("%s=%q: %v", env, v, err)}
			}
		}
	}
	required := len(positional)
	for required > 0 && strings.HasPrefix(positional[required-1], "[") { // optional: [NAME]
		required--
	}
	switch {
	case len(pos) < required:
		return nil, usageError{fmt.Sprintf("%s needs %s", c.name, strings.Join(positional[len(pos):required], " "))}
	case len(pos) > len(positional):
		return nil, usageError{fmt.Sprintf("%s got an unexpected argument %q", c.name, pos[len(positional)])}
	}
	if len(c.formats) > 0 && !slices.Contains(c.formats, c.format) {
		return nil, usageError{fmt.Sprintf("--format %q: use %s", c.format, strings.Join(c.formats, ", "))}
	}
	return pos, nil
}

// usage prints the command's synopsis, what it does, its flags and the
// environment it reads, on stdout.
func (c *cli) usage() {
	w := c.stdout
	fmt.Fprintf(w, "usage: testdbd %s %s\n", c.name, c.synopsis)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.about))
	}
	fmt.Fprintln(w, "\nFlags:")
	printFlags(w, c.fs, nil, func(name string) bool { return connEnv[name] == "" })
	fmt.Fprintln(w, "\nConnection (each also read from the environment variable shown; a flag wins):")
	printFlags(w, c.fs, func(name string) string { return connEnv[name] }, func(name string) bool { return connEnv[name] != "" })
}

func (c *cli) client() (*client.Client, error) {
	opts := []client.Option{client.WithToken(c.token)}
	if c.tlsCA != "" {
		opts = append(opts, client.WithCAFile(c.tlsCA))
	}
	cl, err := client.New(c.addr, opts...)
	if err != nil {
		if strings.Contains(err.Error(), "CA certificate") {
			return nil, usageError{"--tls-ca: " + err.Error()}
		}
		return nil, usageError{"--addr: " + err.Error()}
	}
	return cl, nil
}

func (c *cli) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", b)
	return err
}

// runClientCommand runs a client command and returns the exit status.
// Errors are printed as the daemon wrote them, without Go's wrapping, and
// with the way to fix them named in this command line's terms.
func runClientCommand(cmd string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// net/http's transport logs bytes it did not ask for (a gRPC port's
	// greeting) to the standard logger; the error printed says it better.
	log.SetOutput(io.Discard)
	var err error
	switch cmd {
	case "template":
		err = runTemplate(ctx, args, stdout, stderr)
	case "lease":
		err = runLease(ctx, args, stdout, stderr)
	case "reset":
		err = runReset(ctx, args, stdout, stderr)
	case "renew":
		err = runRenew(ctx, args, stdout, stderr)
	case "release":
		err = runRelease(ctx, args, stdout, stderr)
	case "status":
		err = runStatus(ctx, args, stdout, stderr)
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "testdbd: %s\n(testdbd %s -h lists the flags)\n", ue.msg, cmd)
		return 2
	}
	fmt.Fprintf(stderr, "testdbd: %s\n", humanError(err))
	return 1
}

const templateUsage = `usage: testdbd template ensure|list|get|delete ...

  testdbd template ensure --name NAME --migrations-dir DIR [--upload] [--seed-file FILE]
        build a template from goose (or golang-migrate) migrations, or find the one built
        from the same content; a terminal shows the migration it is on
  testdbd template ensure --name NAME --hash-files GLOB... -- COMMAND [ARGS...]
        build a template with your own migrator: COMMAND runs against a scratch template
        database (DB_*, DATABASE_URL and MYSQL_* in its environment), only when no build
        of the files GLOB matches is live or cached
  testdbd template wait NAME [--hash HASH]
        wait for a build (after ensure --async), showing its progress
  testdbd template list
        the templates, their state and their pools
  testdbd template get NAME
        one template
  testdbd template delete NAME [--force]
        drop a template and its databases (--force: even while leases are held)

testdbd template SUBCOMMAND -h lists a subcommand's flags. The connection
settings are read from TESTDBD_ADDR, TESTDBD_TOKEN and TESTDBD_TLS_CA.
`

func runTemplate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		fmt.Fprint(stdout, templateUsage)
		return flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError{"template needs a subcommand: ensure, wait, list, get or delete"}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "ensure":
		return runTemplateEnsure(ctx, args, stdout, stderr)
	case "wait":
		return runTemplateWait(ctx, args, stdout, stderr)
	case "list":
		return runTemplateList(ctx, args, stdout, stderr)
	case "get", "delete":
		return runTemplateGetDelete(ctx, sub, args, stdout, stderr)
	}
	return usageError{fmt.Sprintf("unknown subcommand %q: use testdbd template ensure, wait, list, get or delete", sub)}
}

// runTemplateList is `testdbd template list`.
func runTemplateList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("template list", "[flags]", stdout, stderr, "text", "json")
	c.about = "Lists the daemon's templates: state, tables, goose version, pool counts, build time, hash."
	if _, err := c.parse(args); err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ts, err := cl.ListTemplates(ctx)
	if err != nil {
		return err
	}
	if c.format == "json" {
		return c.printJSON(map[string]any{"templates": ts})
	}
	return printTemplates(stdout, ts)
}

// runTemplateGetDelete is `testdbd template get` and `testdbd template
// delete` (sub), which take the same arguments.
func runTemplateGetDelete(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	c := newCLI("template "+sub, "NAME [flags]", stdout, stderr, "text", "json")
	c.about = "Shows one template."
	if sub == "delete" {
		c.about = "Drops a template, its worker databases and its pool. Refused while leases of it are held, unless --force."
	}
	force := c.fs.Bool("force", false, "delete even while leases are held; those leases end")
	pos, err := c.parse(args, "NAME")
	if err != nil {
		return err
	}
	if sub == "get" && *force {
		return usageError{"--force is for template delete"}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	var t *client.Template
	if sub == "get" {
		t, err = cl.GetTemplate(ctx, pos[0])
	} else {
		t, err = cl.DeleteTemplate(ctx, pos[0], *force)
	}
	if err != nil {
		return err
	}
	if c.format == "json" {
		return c.printJSON(t)
	}
	if sub == "delete" {
		_, err = fmt.Fprintf(stdout, "deleted template %s\n", t.Name)
		return err
	}
	return printTemplates(stdout, []client.Template{*t})
}

func runLease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("lease", "--template NAME [flags]", stdout, stderr, "json", "env", "dsn", "url")
	c.about = `Leases a database of a template: its own MySQL user and password, until
it is released or its time to live runs out. --format env prints shell
exports (DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME, DB_PASSWORD,
DATABASE_URL, TESTDBD_LEASE_ID, ...) for eval "$(testdbd lease ...)";
--format dsn and url print one line, and the lease's id on stderr.`
	var template, templateHash, strategy, worker, idFile string
	var ttl, wait time.Duration
	var keepAI bool
	c.fs.StringVar(&template, "template", "", "the template to lease from (required)")
	c.fs.StringVar(&templateHash, "template-hash", "", "pin the lease to this build of the template (default $TESTDBD_TEMPLATE_HASH when $TESTDBD_TEMPLATE names the same template: what template ensure --format env exports)")
	c.fs.StringVar(&strategy, "strategy", "", "reset strategy: truncate, snapshot or rollback (default the daemon's)")
	c.fs.DurationVar(&ttl, "ttl", 0, "time to live, e.g. 10m (default the daemon's --lease-ttl)")
	c.fs.StringVar(&worker, "worker", "", "sticky key: the same worker gets its previous database back when it can")
	c.fs.DurationVar(&wait, "wait", 0, "how long to wait for a free database, e.g. 30s (default the daemon's --wait-timeout)")
	c.fs.BoolVar(&keepAI, "keep-auto-increment", false, "resets leave AUTO_INCREMENT where the tests moved it (ids drift; resets are faster)")
	c.fs.StringVar(&idFile, "id-file", "", "also write the lease's id to this file, for testdbd release \"$(cat FILE)\"")
	if _, err := c.parse(args); err != nil {
		return err
	}
	if template == "" {
		return usageError{"lease needs --template"}
	}
	if templateHash == "" && os.Getenv("TESTDBD_TEMPLATE") == template {
		templateHash = os.Getenv("TESTDBD_TEMPLATE_HASH")
	}
	s, err := client.ParseStrategy(strategy)
	if err != nil {
		return usageError{"--strategy: " + err.Error()}
	}
	if ttl < 0 || wait < 0 {
		return usageError{"--ttl and --wait must not be negative"}
	}
	if maxWait := math.MaxInt32 * time.Millisecond; wait > maxWait {
		// The API's wait_timeout_ms is 32 bits; the daemon's
		// --max-wait-timeout is the real bound.
		return usageError{fmt.Sprintf("--wait %s: use at most %s", wait, maxWait.Truncate(time.Hour))}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	// No deadline of our own: the daemon bounds the wait (--max-wait-timeout).
	l, err := cl.AcquireLease(ctx, client.AcquireLeaseRequest{
		Template: template, TemplateHash: templateHash, Strategy: s, TTLSeconds: int32((ttl + time.Second - 1) / time.Second),
		Worker: worker, WaitTimeoutMs: wait.Milliseconds(), KeepAutoIncrement: keepAI,
	})
	if err != nil {
		return err
	}
	if idFile != "" {
		if err := os.WriteFile(idFile, []byte(l.ID+"\n"), 0o600); err != nil {
			// Not leaked: give it back before failing.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			_, _ = cl.ReleaseLease(rctx, l.ID)
			return fmt.Errorf("--id-file: %w (the lease was released)", err)
		}
	}
	switch c.format {
	case "dsn", "url":
		// stdout is the DSN alone, for $(...); the id goes to stderr.
		fmt.Fprintf(stderr, "testdbd: leased %s (database %s until %s); give it back with: testdbd release %s\n",
			l.ID, l.Database, clockTime(l.ExpiresAt), l.ID)
	}
	switch c.format {
	case "env":
		_, err = io.WriteString(stdout, leaseEnv(l))
	case "dsn":
		_, err = fmt.Fprintln(stdout, l.DSN)
	case "url":
		_, err = fmt.Fprintln(stdout, l.URL)
	default:
		err = c.printJSON(l)
	}
	return err
}

// leaseEnv renders a lease as shell exports of the variables frameworks
// read: Laravel's DB_* (with the read and write hosts set together, so a
// read/write split cannot send reads to another server), DB_URL and
// DATABASE_URL (Laravel 11, Django's dj-database-url and others), and
// TESTDBD_LEASE_ID for `testdbd release "$TESTDBD_LEASE_ID"`. Every value
// is single-quoted for POSIX shells.
func leaseEnv(l *client.Lease) string {
	vars := [][2]string{
		{"DB_CONNECTION", "mysql"},
		{"DB_HOST", l.Host},
		{"DB_PORT", strconv.Itoa(int(l.Port))},
		{"DB_DATABASE", l.Database},
		{"DB_USERNAME", l.User},
		{"DB_PASSWORD", l.Password},
		{"DB_READ_HOST", l.Host},
		{"DB_WRITE_HOST", l.Host},
		{"DB_URL", l.URL},
		{"DATABASE_URL", l.URL},
		{"TESTDBD_LEASE_ID", l.ID},
	}
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", v[0], shellQuote(v[1]))
	}
	return b.String()
}

// shellQuote quotes s for POSIX shells: inside single quotes nothing is
// special, and a single quote is written as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runReset(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("reset", "LEASE_ID [flags]", stdout, stderr, "text", "json")
	c.about = `Resets the lease's database to its template now and prints what the reset
did: the tables it restored, how long it took, and why it did more than
asked when it did. The lease's open connections are ended; reconnect.`
	strategy := c.fs.String("strategy", "", "run this strategy instead of the lease's own: truncate, snapshot or rollback")
	pos, err := c.parse(args, "LEASE_ID")
	if err != nil {
		return err
	}
	s, err := client.ParseStrategy(*strategy)
	if err != nil {
		return usageError{"--strategy: " + err.Error()}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	r, err := cl.ResetLease(ctx, pos[0], s)
	if err != nil {
		return err
	}
	if c.format == "json" {
		return c.printJSON(r)
	}
	restored := "nothing to restore"
	if len(r.TablesReset) > 0 {
		restored = "restored " + strings.Join(r.TablesReset, ", ")
	}
	if len(r.TablesDelta) > 0 {
		restored += " (row by row: " + strings.Join(r.TablesDelta, ", ") + ")"
	}
	fmt.Fprintf(stdout, "reset %s by %s in %s ms: %s (%d tables checked)\n", r.LeaseID, r.Strategy.Short(), ms(r.TotalMs), restored, r.TablesTotal)
	if r.FallbackReason != "" {
		fmt.Fprintf(stdout, "  asked for %s; %s\n", r.RequestedStrategy.Short(), r.FallbackReason)
	}
	if r.DeltaFallback != "" {
		fmt.Fprintf(stdout, "  %s\n", r.DeltaFallback)
	}
	if len(r.SchemaChanges) > 0 {
		fmt.Fprintf(stdout, "  schema put back: %s\n", strings.Join(r.SchemaChanges, "; "))
	}
	if len(r.XARolledBack) > 0 {
		fmt.Fprintf(stdout, "  XA transactions left prepared, rolled back: %s\n", strings.Join(r.XARolledBack, ", "))
	}
	return nil
}

func runRenew(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("renew", "LEASE_ID [flags]", stdout, stderr, "text", "json")
	c.about = "Extends a lease's time to live, from now."
	ttl := c.fs.Duration("ttl", 0, "new time to live from now, e.g. 30m (default the lease's own TTL)")
	pos, err := c.parse(args, "LEASE_ID")
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := cl.RenewLease(ctx, pos[0], *ttl)
	if err != nil {
		return err
	}
	if c.format == "json" {
		return c.printJSON(l)
	}
	_, err = fmt.Fprintf(stdout, "renewed %s until %s\n", l.ID, clock(l.ExpiresAt))
	return err
}

func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("release", "LEASE_ID [flags]", stdout, stderr, "text", "json")
	c.about = `Gives a lease back: the lease ends at once, and the daemon then, in the
background, locks its MySQL user and ends its sessions, resets the
database, and gives the same user a new password for the database's next
lease. Releasing a released lease is not an error.`
	pos, err := c.parse(args, "LEASE_ID")
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := cl.ReleaseLease(ctx, pos[0])
	if err != nil {
		return err
	}
	if endedBefore(l) {
		fmt.Fprintf(stderr, "testdbd: lease %s had ended before this release: %s\n", l.ID, l.EndedReason)
	}
	if c.format == "json" {
		return c.printJSON(l)
	}
	if endedBefore(l) {
		_, err = fmt.Fprintf(stdout, "%s %s\n", l.ID, l.State)
		return err
	}
	_, err = fmt.Fprintf(stdout, "released %s (database %s); the daemon resets it in the background\n", l.ID, l.Database)
	return err
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCLI("status", "[LEASE_ID] [flags]", stdout, stderr, "text", "json")
	c.about = `Shows the daemon's servers (whether their datadir is on tmpfs, whether
every setting took), templates and pools, active leases, and reset and
acquire latency percentiles. With a lease's id, shows that lease: until
when it is leased, or, once it has ended, why and what to do.`
	pos, err := c.parse(args, "[LEASE_ID]")
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if len(pos) == 1 {
		return leaseStatus(ctx, c, cl, pos[0])
	}
	insts, err := cl.ListInstances(ctx)
	if err != nil {
		return err
	}
	tpls, err := cl.ListTemplates(ctx)
	if err != nil {
		return err
	}
	leases, err := cl.ListLeases(ctx, "")
	if err != nil {
		return err
	}
	stats, err := cl.GetStats(ctx)
	if err != nil {
		return err
	}
	if c.format == "json" {
		return c.printJSON(map[string]any{"instances": insts, "templates": tpls, "leases": leases, "stats": stats})
	}
	fmt.Fprintf(stdout, "daemon %s: %d instances, %d templates, %d databases, %d leases active (%d acquired, %d expired, %d acquires exhausted)\n",
		cl.Addr(), stats.Instances, stats.Templates, stats.Databases, stats.LeasesActive, stats.LeasesAcquired, stats.LeasesExpired, stats.AcquireExhausted)

	fmt.Fprintln(stdout, "\nINSTANCES")
	tw := table(stdout)
	fmt.Fprintln(tw, "ID\tENGINE\tSTATE\tADDRESS\tDATABASES\tMEMORY\tTMPFS\tSTARTUP ms\tSETTINGS")
	for _, in := range insts {
		settings := "as asked"
		if len(in.SettingsMismatched) > 0 {
			settings = "differ: " + strings.Join(in.SettingsMismatched, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s:%d\t%d\t%s\t%s\t%s\t%s\n", in.ID, in.Engine, in.Version, in.State, in.Host, in.Port,
			in.Databases, mib(in.MemoryBytes), yesNo(in.DatadirOnTmpfs), ms(in.StartupMs), settings)
	}
	tw.Flush()

	fmt.Fprintln(stdout, "\nTEMPLATES")
	if err := printTemplates(stdout, tpls); err != nil {
		return err
	}

	fmt.Fprintln(stdout, "\nLEASES")
	tw = table(stdout)
	fmt.Fprintln(tw, "ID\tTEMPLATE\tSTRATEGY\tWORKER\tDATABASE\tADDRESS\tEXPIRES IN\tRESETS")
	for _, l := range leases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s:%d\t%s\t%d\n", l.ID, l.Template, l.Strategy.Short(), dash(l.Worker), l.Database,
			l.Host, l.Port, time.Until(l.ExpiresAt).Round(time.Second), l.Resets)
	}
	tw.Flush()

	fmt.Fprintln(stdout, "\nRESETS (ms)")
	tw = table(stdout)
	fmt.Fprintln(tw, "STRATEGY\tCOUNT\tP50\tP90\tP99\tMAX\tMEAN\tFALLBACKS\tFAILURES")
	for _, r := range stats.Resets {
		l := r.Latency
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", r.Strategy.Short(), l.Count, ms(l.P50Ms), ms(l.P90Ms), ms(l.P99Ms), ms(l.MaxMs), ms(l.MeanMs), r.Fallbacks, r.Failures)
	}
	for _, row := range []struct {
		name string
		l    client.LatencyStats
	}{{"acquire", stats.Acquire}, {"acquire wait", stats.AcquireWait}} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\t\n", row.name, row.l.Count, ms(row.l.P50Ms), ms(row.l.P90Ms), ms(row.l.P99Ms), ms(row.l.MaxMs), ms(row.l.MeanMs))
	}
	return tw.Flush()
}

func printTemplates(w io.Writer, ts []client.Template) error {
	tw := table(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tCURRENT\tSOURCE\tTABLES\tVERSION\tREADY\tLEASED\tRESETTING\tBUILD ms\tHASH\tERROR")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%.12s\t%s\n", t.Name, templateState(t.State), yesNo(t.Current), dash(t.Source),
			t.Tables, t.Version, t.Pool.Ready, t.Pool.Leased, t.Pool.Resetting, ms(t.Build.TotalMs), t.Hash, t.Error)
	}
	return tw.Flush()
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func templateState(s client.TemplateState) string {
	return strings.ToLower(strings.TrimPrefix(string(s), "TEMPLATE_STATE_"))
}

// ms formats milliseconds with up to three decimals.
func ms(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func mib(b int64) string { return fmt.Sprintf("%dM", b>>20) }

// count writes "1 table" or "2 tables".
func count(n int32, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
