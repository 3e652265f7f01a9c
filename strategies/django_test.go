package strategies_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/binlog"
	"github.com/testdbd/testdbd/internal/dbcompare"
	"github.com/testdbd/testdbd/internal/testenv"
	"github.com/testdbd/testdbd/strategies"
	"github.com/testdbd/testdbd/templates"
)

var djangoN = flag.Int("django.n", envInt("TESTDBD_DJANGO_N", 60), "random workloads per strategy in TestDjangoSchema")

// djangoData fills the migrated contrib apps with generated rows: users,
// groups and their memberships and permissions, sessions and admin log
// entries.
const djangoData = `
INSERT INTO auth_group (name) VALUES ('editors'), ('readers'), ('admins'), ('support'), ('billing');
INSERT INTO auth_user (password, last_login, is_superuser, username, first_name, last_name, email, is_staff, is_active, date_joined)
SELECT CONCAT('pbkdf2_sha256$x$', n), IF(n % 3 = 0, NULL, '2024-05-01 10:00:00.123456'), n % 50 = 0, CONCAT('user', n),
  CONCAT('First', n), CONCAT('Last', n), CONCAT('user', n, '@example.com'), n % 10 = 0, n % 17 <> 0, '2024-01-01 00:00:00'
FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1 AS n
  FROM (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a,
       (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b,
       (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c) seq
ORDER BY n;
INSERT INTO auth_user_groups (user_id, group_id) SELECT id, 1 + id % 5 FROM auth_user WHERE id % 4 <> 0;
INSERT INTO auth_group_permissions (group_id, permission_id) SELECT g.id, p.id FROM auth_group g JOIN auth_permission p ON (p.id + g.id) % 3 = 0;
INSERT INTO auth_user_user_permissions (user_id, permission_id) SELECT u.id, p.id FROM auth_user u JOIN auth_permission p ON p.id = 1 + u.id % 7 WHERE u.is_staff;
INSERT INTO django_session (session_key, session_data, expire_date) SELECT CONCAT('s', LPAD(id, 31, '0')), REPEAT('x', 40 + id % 20), '2030-01-01 00:00:00' FROM auth_user WHERE id <= 500;
INSERT INTO django_admin_log (action_time, object_id, object_repr, action_flag, change_message, content_type_id, user_id)
SELECT '2024-06-01 12:00:00', u.id, CONCAT('user', u.id), 1 + u.id % 3, '[]', (SELECT MIN(id) FROM django_content_type), 1 + u.id % 20 FROM auth_user u;
`

// TestDjangoSchema resets a real-world schema that comes from a Debian
// package: Django's contrib apps (admin, auth, contenttypes, sessions),
// migrated by Django's own `manage.py migrate` through testdbd's external
// build, then filled with generated rows. Random workloads of what a
// Django test does to them (users, groups, permissions, sessions, the
// admin log; rolled-back and committed transactions, a second connection,
// the odd schema change) are reset by each strategy and the whole database
// compared with the template.
func TestDjangoSchema(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import django, pymysql").Run(); err != nil {
		t.Skipf("%s cannot import django and pymysql (%v): scripts/install-deps.sh clients installs python3-django and python3-pymysql (make test-all does)", py, err)
	}
	manage, err := filepath.Abs(filepath.Join("testdata", "djangoschema", "manage.py"))
	if err != nil {
		t.Fatal(err)
	}
	seed := *propertySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -property.seed=%d), %d workloads per strategy", seed, seed, *djangoN)
	for _, p := range testenv.EngineCells() {
		t.Run(p.Name, func(t *testing.T) {
			srv := testenv.ServerOf(t, p)
			if srv.Flavor == testdbd.MySQL && exec.Command(py, "-c", "import cryptography").Run() != nil {
				t.Skipf("PyMySQL needs python3-cryptography to log in to MySQL (caching_sha2_password): scripts/install-deps.sh clients installs it (make test-all does)")
			}
			ctx := context.Background()
			f := &fixture{t: t, root: t, srv: srv, ddl: &strategies.DDLCounter{}, binlog: &binlog.Log{}}
			build, err := templates.BeginExternal(ctx, srv, f.ddl, f.binlog, "dj_tpl")
			if err != nil {
				t.Fatal(err)
			}
			host, port := srv.ClientAddr()
			cmd := exec.Command(py, manage, "migrate", "--no-input", "--skip-checks")
			cmd.Env = append(os.Environ(), "TESTDBD_HOST="+host, "TESTDBD_PORT="+strconv.Itoa(port), "TESTDBD_USER="+build.User,
				"TESTDBD_PASSWORD="+build.Password, "TESTDBD_DB=dj_tpl", "PYTHONDONTWRITEBYTECODE=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				templates.AbortExternal(ctx, srv, f.ddl, f.binlog, "dj_tpl", build.User)
				t.Fatalf("manage.py migrate: %v\n%s", err, out)
			}
			if _, err := srv.DB.ExecContext(ctx, "USE dj_tpl; "+djangoData); err != nil {
				templates.AbortExternal(ctx, srv, f.ddl, f.binlog, "dj_tpl", build.User)
				t.Fatalf("generated data: %v", err)
			}
			built, err := templates.FinishExternal(ctx, srv, f.ddl, "dj_tpl", build.User, templates.BuildOptions{Binlog: f.binlog})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { templates.AbortExternal(context.Background(), srv, f.ddl, f.binlog, "dj_tpl", build.User) })
			f.schema = built.Schema
			if f.want, err = dbcompare.Take(ctx, srv.DB, "dj_tpl"); err != nil {
				t.Fatal(err)
			}
			var rows int64
			for _, r := range f.want.Rows {
				rows += r
			}
			t.Logf("template: %d tables, %d rows, built by manage.py migrate", len(f.schema.Tables), rows)
			for _, s := range testdbd.Strategies {
				t.Run(s.String(), func(t *testing.T) {
					f.t = t
					rng := rand.New(rand.NewPCG(seed, uint64(s)))
					tg, a := f.worker("w_dj_"+s.String(), s)
					b := reopenAs(t, a)
					stats := map[string]int{}
					for i := 0; i < *djangoN; i++ {
						w := &randomWorkload{rng: rng, a: a, b: b, strategy: s, direct: map[string]bool{}, xidPrefix: tg.Database + "_",
							endEmptyXA: srv.Flavor == testdbd.MySQL}
						dj := djangoWorkload{w}
						w.dml, w.schemaDDL = dj.statement, dj.ddl
						w.run(t)
						rep, base, err := strategies.Reset(context.Background(), *tg)
						if err != nil {
							t.Fatalf("seed %d workload %d: reset: %v\nworkload:\n%s", seed, i, err, w.log.String())
						}
						tg.Baseline = base
						left := commitAbandoned(t, srv.DB, w.xidPrefix) // see propertyRun
						if d := f.diff(tg.Database); len(d) > 0 {
							t.Fatalf("seed %d workload %d: the %s reset left %d differences (after committing the XA transactions it left prepared: %v):\n%s\nreport: %+v\nworkload:\n%s",
								seed, i, s, len(d), left, strings.Join(d, "\n"), rep, w.log.String())
						}
						stats["tables reset"] += len(rep.TablesReset)
						if strings.Contains(rep.FallbackReason, "checked every table") {
							stats["full checks"]++
						}
						stats["statements"] += w.statements
						stats["failed statements"] += w.failed
					}
					t.Logf("%s: %d workloads, all equal to the template after reset; %v", s, *djangoN, stats)
				})
			}
		})
	}
}

// djangoWorkload draws the statements of a random test of a Django
// application (randomWorkload runs them).
type djangoWorkload struct{ *randomWorkload }

func (w djangoWorkload) statement() string {
	user := func() int { return 1 + w.n(1100) } // some ids do not exist
	word := func() string { return fmt.Sprintf("w%d", w.n(100000)) }
	switch w.n(12) {
	case 0:
		return fmt.Sprintf("INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, is_active, date_joined) "+
			"VALUES ('x', 0, '%s', 'F', 'L', '%s@example.com', 0, 1, NOW(6))", word(), word())
	case 1:
		return fmt.Sprintf("UPDATE auth_user SET last_login = NOW(6) WHERE id = %d", user())
	case 2:
		// Django deletes the rows that point at a user first; a test that
		// does not fails on the foreign key.
		id := user()
		if w.n(2) == 0 {
			return fmt.Sprintf("DELETE FROM auth_user WHERE id = %d", id)
		}
		return fmt.Sprintf("DELETE FROM auth_user_groups WHERE user_id = %[1]d; DELETE FROM auth_user_user_permissions WHERE user_id = %[1]d; "+
			"DELETE FROM django_admin_log WHERE user_id = %[1]d; DELETE FROM auth_user WHERE id = %[1]d", id)
	case 3:
		return fmt.Sprintf("INSERT INTO auth_user_groups (user_id, group_id) VALUES (%d, %d)", user(), 1+w.n(6))
	case 4:
		return fmt.Sprintf("DELETE FROM auth_user_groups WHERE group_id = %d AND user_id < %d", 1+w.n(5), user())
	case 5:
		return fmt.Sprintf("INSERT INTO auth_group (name) VALUES ('%s')", word())
	case 6:
		return fmt.Sprintf("INSERT INTO django_session (session_key, session_data, expire_date) VALUES ('%s', 'data', NOW(6) + INTERVAL 1 DAY)", word())
	case 7:
		return fmt.Sprintf("DELETE FROM django_session WHERE session_key < 's%031d'", w.n(600))
	case 8:
		return fmt.Sprintf("INSERT INTO django_admin_log (action_time, object_id, object_repr, action_flag, change_message, content_type_id, user_id) "+
			"VALUES (NOW(6), '%d', 'x', 2, '[]', (SELECT MIN(id) FROM django_content_type), %d)", user(), 1+w.n(20))
	case 9:
		return fmt.Sprintf("UPDATE auth_user SET is_active = NOT is_active, email = '%s@x' WHERE id BETWEEN %d AND %d", word(), user(), user())
	case 10:
		return fmt.Sprintf("INSERT INTO auth_user_user_permissions (user_id, permission_id) VALUES (%d, %d)", user(), 1+w.n(40))
	default:
		return fmt.Sprintf("UPDATE django_content_type SET model = '%s' WHERE id = %d", word(), 1+w.n(12))
	}
}

func (w djangoWorkload) ddl() string {
	return []string{
		"ALTER TABLE auth_user ADD COLUMN nickname VARCHAR(20) NULL",
		"CREATE INDEX by_email ON auth_user (email)",
		"TRUNCATE TABLE django_session",
		"ANALYZE TABLE auth_user",
		"DROP TABLE django_admin_log",
	}[w.n(5)]
}
