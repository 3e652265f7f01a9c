package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/internal/testenv"
)

// mysqlImage is the MySQL image the README's engine table names.
const mysqlImage = "testdbd/mysql:9.7-local"

// readmeCurlFlow returns the curl commands of the README's quickstart, in
// order.
func readmeCurlFlow(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Quickstart")
	if ok {
		_, rest, ok = strings.Cut(rest, "```sh\n")
	}
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no quickstart shell block")
	}
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "curl ") {
			cmd, _, _ := strings.Cut(line, " #")
			cmds = append(cmds, strings.TrimSpace(cmd))
		}
	}
	if len(cmds) < 4 {
		t.Fatalf("the quickstart has %d curl commands", len(cmds))
	}
	return cmds
}

// TestMySQLDaemonREADMEFlow starts the daemon as the README says for MySQL
// (--provider docker --image testdbd/mysql:9.7-local), runs the
// quickstart's curl commands against it as written (with the daemon's
// address, the lease's id and the examples' absolute path put in), and
// logs in to leases with the Go driver, PHP's PDO and PyMySQL: each on a
// lease of its own, so that each makes its user's first login, the full
// caching_sha2_password exchange over plain TCP.
func TestMySQLDaemonREADMEFlow(t *testing.T) {
	needDocker(t)
	testenv.NeedImage(t, mysqlImage)
	testenv.NeedCommand(t, "curl", "apt-get install curl")
	testenv.NeedCommand(t, "php", "scripts/install-deps.sh examples")
	py := pythonWithPyMySQL(t)
	state := testenv.StateDir(t)
	removeContainersAtEnd(t, state)
	d := startDaemon(t, state, "--provider", "docker", "--image", mysqlImage)

	examples, _ := filepath.Abs(filepath.Join(repoRoot, "examples", "migrations"))
	leaseID := ""
	for _, c := range readmeCurlFlow(t) {
		c = strings.ReplaceAll(c, "localhost:8080", d.httpAddr)
		c = strings.ReplaceAll(c, "./examples/migrations", examples)
		if strings.Contains(c, "l-f0ab…") {
			if leaseID == "" {
				t.Fatalf("%s: no lease was acquired before", c)
			}
			c = strings.ReplaceAll(c, "l-f0ab…", leaseID)
		}
		out, err := exec.Command("bash", "-c", strings.Replace(c, "curl -s", "curl -sS --fail-with-body", 1)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
		var reply struct {
			ID, State, Error, Strategy string
		}
		_ = json.Unmarshal(out, &reply)
		switch {
		case strings.Contains(c, "/v1/templates"):
			if reply.State != "TEMPLATE_STATE_READY" {
				t.Fatalf("%s: %s", c, out)
			}
		case strings.Contains(c, "/v1/leases -d"):
			leaseID = reply.ID
		case strings.Contains(c, ":reset"):
			if reply.Strategy != "STRATEGY_SNAPSHOT" {
				t.Errorf("%s: %s", c, out)
			}
		case strings.HasSuffix(c, "/v1/instances"):
			if !strings.Contains(string(out), `"engine":"mysql"`) && !strings.Contains(string(out), `"engine": "mysql"`) {
				t.Errorf("%s: no MySQL instance: %s", c, out)
			}
		}
		t.Logf("%s → %.200s", c, out)
	}

	type leaseJSON struct {
		ID, Host, User, Password, Database, DSN string
		Port                                    int
	}
	acquire := func(worker string) leaseJSON {
		var l leaseJSON
		d.postJSON(t, "/v1/leases", map[string]any{"template": "app", "strategy": "STRATEGY_SNAPSHOT", "worker": worker}, &l)
		if l.User == "" || l.Password == "" || l.Database == "" {
			t.Fatalf("lease: %+v", l)
		}
		return l
	}
	const want = "from a client"
	check := func(name string, l leaseJSON, out []byte, err error) {
		t.Helper()
		if err != nil || !strings.Contains(string(out), l.User+"@%|"+l.Database+"|"+want) {
			t.Errorf("%s on lease %s: %v\n%s", name, l.ID, err, out)
		}
	}

	// The Go driver, with the lease's DSN as given.
	l := acquire("go")
	cfg, err := mysql.ParseDSN(l.DSN)
	if err != nil {
		t.Fatalf("lease dsn %q: %v", l.DSN, err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	var user, database, title string
	_, err = db.Exec("INSERT INTO users (email, name) VALUES ('go@x', '" + want + "')")
	if err == nil {
		err = db.QueryRow("SELECT CURRENT_USER(), DATABASE(), name FROM users WHERE email = 'go@x'").Scan(&user, &database, &title)
	}
	db.Close()
	check("Go driver", l, []byte(user+"|"+database+"|"+title), err)

	// PHP PDO (mysqlnd).
	l = acquire("php")
	php := `$db = new PDO(getenv('DSN'), getenv('DBUSER'), getenv('DBPASS'), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$db->exec("INSERT INTO users (email, name) VALUES ('php@x', 'from a client')");
echo implode('|', $db->query("SELECT CURRENT_USER(), DATABASE(), name FROM users WHERE email = 'php@x'")->fetch(PDO::FETCH_NUM)), "\n";`
	cmd := exec.Command("php", "-r", php)
	cmd.Env = append(os.Environ(), "DSN=mysql:host="+l.Host+";port="+strconv.Itoa(l.Port)+";dbname="+l.Database,
		"DBUSER="+l.User, "DBPASS="+l.Password)
	out, err := cmd.CombinedOutput()
	check("PHP PDO", l, out, err)

	// PyMySQL.
	l = acquire("python")
	pyCode := `import os, pymysql
db = pymysql.connect(host=os.environ["DBHOST"], port=int(os.environ["DBPORT"]), user=os.environ["DBUSER"],
                     password=os.environ["DBPASS"], database=os.environ["DBNAME"], autocommit=True)
cur = db.cursor()
cur.execute("INSERT INTO users (email, name) VALUES ('py@x', 'from a client')")
cur.execute("SELECT CURRENT_USER(), DATABASE(), name FROM users WHERE email = 'py@x'")
print("|".join(cur.fetchone()))`
	cmd = exec.Command(py, "-c", pyCode)
	cmd.Env = append(os.Environ(), "DBHOST="+l.Host, "DBPORT="+strconv.Itoa(l.Port), "DBNAME="+l.Database,
		"DBUSER="+l.User, "DBPASS="+l.Password)
	out, err = cmd.CombinedOutput()
	check("PyMySQL", l, out, err)
}
