package lease_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/templates"
)

// negative matches a duration below zero in a message ("in -208ms").
var negative = regexp.MustCompile(`in -[0-9]`)

// buildExternal builds template name of content as the caller's own
// migrator would: a table with two rows.
func buildExternal(t *testing.T, e *env, name, content string) templates.Info {
	t.Helper()
	ctx := context.Background()
	info, b, err := e.m.BeginExternal(ctx, templates.ExternalRequest{Name: name, ContentHash: content})
	if err != nil || b == nil {
		t.Fatalf("begin the external build of %s: %+v %+v %v", name, info, b, err)
	}
	db, err := sql.Open("mysql", b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "CREATE TABLE users (id INT PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ann'), (2, 'bob')")
	db.Close()
	info, err = e.m.FinishExternal(ctx, name, info.Hash, false)
	if err != nil || info.State != templates.Ready {
		t.Fatalf("finish the external build of %s: %+v %v", name, info, err)
	}
	return info
}

// waitReady waits until the build of name with hash is ready.
func (e *env) waitReady(t *testing.T, name, hash string) templates.Info {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		info, err := e.m.GetTemplate(name, hash)
		if err == nil && info.State == templates.Ready && info.Progress.Phase == templates.PhaseDone {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("template %s is not ready: %+v %v", name, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCached waits until the cache in dir holds an image of each hash.
func waitCached(t *testing.T, dir string, hashes ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, h := range hashes {
		for !cached(dir, h) {
			if time.Now().After(deadline) {
				t.Fatalf("template %s was not cached", templates.Short(h))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// killServer kills e's server with -9 and returns its id.
func killServer(t *testing.T, p testenv.Provider, e *env) string {
	t.Helper()
	members := e.fleet.Members()
	if len(members) != 1 {
		t.Fatalf("%d servers, want 1", len(members))
	}
	id := members[0].ID()
	p.Kill(t, members[0])
	return id
}

// leaseAfterDeath acquires a database of each template in names, served
// by another server than the dead one, within two minutes and with no
// help: the templates heal by themselves. No message along the way gives a
// negative duration.
func leaseAfterDeath(t *testing.T, e *env, dead string, names ...string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range names {
		for {
			l, err := e.m.Acquire(ctx, lease.AcquireRequest{Template: name, Strategy: testdbd.StrategySnapshot, WaitTimeout: 20 * time.Second})
			info, _ := e.m.GetTemplate(name, "")
			for _, msg := range []string{fmt.Sprint(err), info.Err} {
				if negative.MatchString(msg) {
					t.Errorf("template %s: a negative duration: %s", name, msg)
				}
			}
			if err == nil && l.InstanceID == dead {
				e.m.Release(l.ID) // handed out before the death was noticed
				continue
			}
			if err == nil {
				var n int
				if err := open(t, l).QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n == 0 {
					t.Fatalf("a lease of %s after the heal: %d users, %v", name, n, err)
				}
				e.m.Release(l.ID)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("template %s did not heal within two minutes of its server's death: %v (%s %q)", name, err, info.State, info.Err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestTemplateHealsAfterItsServersDie: templates restored from the
// template cache (after a daemon restart, every template is) heal by
// themselves when their only server dies: restored again from the cache
// on a new server, or, once the cache lost the image, built again from
// the migrations the daemon has. An ensure right after the death finds the
// template ready. A template no server, image or migration can make again
// (a build of the caller's own migrator, without a cache) says so, with
// no negative "tries again in", and beginning its build again builds it
// again.
func TestTemplateHealsAfterItsServersDie(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			cache := t.TempDir()
			builder := newEnv(t, p, 1, lease.Config{PoolSize: 1, CacheDir: cache})
			app := builder.ensure(t, "app", 1)
			ext := buildExternal(t, builder, "ext", "ext-v1")
			waitCached(t, cache, app.Hash, ext.Hash)

			// The daemon after a restart: every template comes from the cache.
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1, CacheDir: cache})
			if got := e.ensure(t, "app", 1); got.Source != templates.SourceCache || got.Hash != app.Hash {
				t.Fatalf("app after the restart: %+v", got)
			}
			info, b, err := e.m.BeginExternal(ctx, templates.ExternalRequest{Name: "ext", ContentHash: "ext-v1"})
			if err != nil || b != nil {
				t.Fatalf("begin ext after the restart: %+v %+v %v", info, b, err)
			}
			if got := e.waitReady(t, "ext", ext.Hash); got.Source != templates.SourceCache {
				t.Fatalf("ext after the restart: %+v", got)
			}

			// Its server dies: both come back from the cache on a new one.
			dead := killServer(t, p, e)
			leaseAfterDeath(t, e, dead, "app", "ext")

			// Again, with app's image gone: built again from its migrations.
			if err := os.Remove(filepath.Join(cache, app.Hash+".tdbimg")); err != nil {
				t.Fatal(err)
			}
			dead = killServer(t, p, e)
			leaseAfterDeath(t, e, dead, "app")

			// An ensure right after the death finds it ready.
			dead = killServer(t, p, e)
			got, err := e.m.EnsureTemplate(ctx, templates.Request{Name: "app", Files: exampleFiles(t), PoolSize: 1})
			if err != nil || got.State == templates.Failed || negative.MatchString(got.Err) {
				t.Fatalf("ensure right after the server's death: %+v %v", got, err)
			}
			leaseAfterDeath(t, e, dead, "app")

			// Without a cache, a build of the caller's migrator cannot be made
			// again by the daemon: it says so, and a new begin builds it.
			solo := newEnv(t, p, 1, lease.Config{PoolSize: 1})
			built := buildExternal(t, solo, "solo", "solo-v1")
			killServer(t, p, solo)
			deadline := time.Now().Add(2 * time.Minute)
			for {
				got, _ := solo.m.GetTemplate("solo", "")
				if negative.MatchString(got.Err) {
					t.Errorf("a negative duration: %s", got.Err)
				}
				if got.State == templates.Degraded && strings.Contains(got.Err, "begin its build again") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("solo after its server's death: %s %q", got.State, got.Err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			again := buildExternal(t, solo, "solo", "solo-v1")
			if again.Hash != built.Hash {
				t.Errorf("built again as %s, was %s", templates.Short(again.Hash), templates.Short(built.Hash))
			}
			solo.acquire(t, lease.AcquireRequest{Template: "solo", Strategy: testdbd.StrategySnapshot})
		})
	}
}

// logBuffer collects a manager's log, as JSON lines (and shows it in the
// test's log with -v).
type logBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if testing.Verbose() {
		l.t.Log(strings.TrimSpace(string(p)))
	}
	return l.b.Write(p)
}

func newLogBuffer(t *testing.T) (*logBuffer, *slog.Logger) {
	l := &logBuffer{t: t}
	return l, slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// entries returns the log's entries with message msg.
func (l *logBuffer) entries(msg string) []map[string]any {
	return l.where(func(e map[string]any) bool { return e["msg"] == msg })
}

// where returns the log's entries that keep says to.
func (l *logBuffer) where(keep func(map[string]any) bool) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.b.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// failureLog logs the warnings and errors the log holds when t fails: what
// the daemon saw that the test cannot.
func (l *logBuffer) failureLog(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() || testing.Verbose() {
			return
		}
		for _, e := range l.where(func(e map[string]any) bool { return e["level"] == "WARN" || e["level"] == "ERROR" }) {
			t.Logf("daemon: %v", e)
		}
	})
}

// onServer is what a server holds of a template build: its databases, the
// build accounts, the prepared XA transactions.
type onServer struct {
	databases []string
	builders  int
	xids      []string
}

func stateOf(t *testing.T, srv *instance.Member, hash string) onServer {
	t.Helper()
	var s onServer
	query := func(q string, scan func(*sql.Rows) error, args ...any) {
		rows, err := srv.DB.Query(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				t.Fatal(err)
			}
		}
	}
	query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?", func(r *sql.Rows) error {
		var n string
		err := r.Scan(&n)
		s.databases = append(s.databases, n)
		return err
	}, "tdb\\_"+templates.Short(hash)+"\\_%")
	if err := srv.DB.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'tdbt\\_%'").Scan(&s.builders); err != nil {
		t.Fatal(err)
	}
	query("XA RECOVER", func(r *sql.Rows) error {
		var format, gl, bl int64
		var data string
		err := r.Scan(&format, &gl, &bl, &data)
		s.xids = append(s.xids, data)
		return err
	})
	return s
}

// TestFailedBuildLeavesNothing: a build that fails (its migration, its
// seed, its time limit, the template deleted while it builds, an external
// build deleted while the caller's migrator is at it) leaves nothing on
// the server: not its scratch database, not its account, not the XA
// transaction its session left prepared (whose locks would otherwise hold
// the drop, and whose changes anyone knowing the xid could commit). The
// log says what was dropped. DELETE with force of the failed template
// finds nothing more to drop.
func TestFailedBuildLeavesNothing(t *testing.T) {
	for _, p := range testenv.Providers() {
		t.Run(p.Name, func(t *testing.T) {
			logs, logger := newLogBuffer(t)
			e := newEnv(t, p, 1, lease.Config{PoolSize: 1, Logger: logger})
			ctx := context.Background()
			e.ensure(t, "app", 1)
			srv := e.fleet.Members()[0]
			table := migration("00001_a.sql", "CREATE TABLE a (id INT PRIMARY KEY)", "INSERT INTO a VALUES (1)")
			xa := func(xid string) string {
				return fmt.Sprintf("XA START '%s'; INSERT INTO a VALUES (2); XA END '%s'; XA PREPARE '%s'", xid, xid, xid)
			}
			slow := migration("00002_slow.sql", "DO SLEEP(600)")
			for _, c := range []struct {
				name, xid string
				build     func(t *testing.T, name string) (hash string)
			}{
				{"migration", "tdbtest-migration", func(t *testing.T, name string) string {
					files := []migrations.File{table, {Name: "00002_xa.sql",
						Content: []byte("-- +goose NO TRANSACTION\n-- +goose Up\n" + xa("tdbtest-migration") + ";\nSELECT nonsense FROM nowhere;\n")}}
					info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: name, Files: files})
					if err == nil || info.State != templates.Failed {
						t.Fatalf("a migration that fails: %+v %v", info, err)
					}
					return info.Hash
				}},
				{"seed", "tdbtest-seed", func(t *testing.T, name string) string {
					info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: name, Files: []migrations.File{table},
						Seed: xa("tdbtest-seed") + "; SELECT nonsense FROM nowhere"})
					if err == nil || info.State != templates.Failed {
						t.Fatalf("a seed that fails: %+v %v", info, err)
					}
					return info.Hash
				}},
				{"time-limit", "", func(t *testing.T, name string) string {
					info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: name, Files: []migrations.File{table, slow}, BuildTimeout: time.Second})
					if testdbd.ErrorCode(err) != testdbd.ETimeout {
						t.Fatalf("a build past its time limit: %+v %v", info, err)
					}
					return info.Hash
				}},
				{"deleted", "", func(t *testing.T, name string) string {
					info, err := e.m.EnsureTemplate(ctx, templates.Request{Name: name, Files: []migrations.File{table, slow}, Async: true})
					if err != nil {
						t.Fatal(err)
					}
					for deadline := time.Now().Add(time.Minute); info.Progress.Migration != "00002_slow.sql"; {
						if time.Now().After(deadline) {
							t.Fatalf("the build never reached its slow migration: %+v", info)
						}
						time.Sleep(20 * time.Millisecond)
						info, _ = e.m.GetTemplate(name, "")
					}
					time.Sleep(100 * time.Millisecond) // into its statement
					if _, err := e.m.DeleteTemplate(ctx, name, true); err != nil {
						t.Fatal(err)
					}
					return info.Hash
				}},
				{"external-deleted", "tdbtest-external", func(t *testing.T, name string) string {
					info, b, err := e.m.BeginExternal(ctx, templates.ExternalRequest{Name: name, ContentHash: "v1"})
					if err != nil || b == nil {
						t.Fatalf("begin: %+v %v", info, err)
					}
					db, err := sql.Open("mysql", b.DSN)
					if err != nil {
						t.Fatal(err)
					}
					mustExec(t, db, "CREATE TABLE a (id INT PRIMARY KEY); "+xa("tdbtest-external"))
					db.Close()
					if _, err := e.m.DeleteTemplate(ctx, name, true); err != nil {
						t.Fatal(err)
					}
					return info.Hash
				}},
			} {
				t.Run(c.name, func(t *testing.T) { checkFailedBuild(t, e, logs, srv, "failing-"+c.name, c.xid, c.build) })
			}
			// The server's other template is untouched.
			e.acquire(t, lease.AcquireRequest{Template: "app", Strategy: testdbd.StrategySnapshot})
		})
	}
}

// checkFailedBuild runs build, a build of template name that fails, and
// checks that it leaves nothing on srv and that the log says what was
// dropped (xid among the XA transactions rolled back, when not empty).
func checkFailedBuild(t *testing.T, e *env, logs *logBuffer, srv *instance.Member, name, xid string, build func(*testing.T, string) string) {
	ctx := context.Background()
	builders := stateOf(t, srv, "none").builders
	hash := build(t, name)
	deadline := time.Now().Add(time.Minute)
	var dropped []map[string]any
	for {
		s := stateOf(t, srv, hash)
		dropped = logs.entries("dropped what a failed build made")
		dropped = slices.DeleteFunc(dropped, func(e map[string]any) bool { return e["template"] != name })
		if len(s.databases) == 0 && s.builders == builders && !slices.Contains(s.xids, xid) && len(dropped) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the build failed the server holds databases %v, %d build accounts (%d before), prepared XA %v; the log says of the drop: %v",
				s.databases, s.builders, builders, s.xids, dropped)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rolled := fmt.Sprint(dropped[0]["xa_rolled_back"]); xid != "" && !strings.Contains(rolled, xid) {
		t.Errorf("the log names %s as rolled back, not %s", rolled, xid)
	}
	if _, err := e.m.DeleteTemplate(ctx, name, true); err != nil && testdbd.ErrorCode(err) != testdbd.ENotFound {
		t.Errorf("delete with force: %v", err)
	}
	if s := stateOf(t, srv, hash); len(s.databases) > 0 || s.builders != builders || slices.Contains(s.xids, xid) {
		t.Errorf("after delete with force: %+v", s)
	}
}
