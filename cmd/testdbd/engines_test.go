package main

import (
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestTwoEnginesOneDaemon: one daemon serves MariaDB (its default, native)
// and MySQL 9.7 (--engine-image) side by side: a template names its
// engine, leases of each run on their own engine, an engine the daemon
// does not serve is refused naming those it does, every lease's TLS
// connection verifies with the daemon's one authority, and SIGTERM leaves
// no container.
func TestTwoEnginesOneDaemon(t *testing.T) {
	testenv.NeedImage(t, mysqlImage)
	state := testenv.StateDir(t)
	removeContainersAtEnd(t, state+"/engines/1")
	d := startDaemon(t, state, "--provider", "native", "--engine-image", mysqlImage)
	dir := repoRoot + "/examples/migrations"
	type tplJSON struct {
		State, Engine, Hash, Error string
	}
	versions := map[string]string{}
	cas := map[string]bool{}
	for _, c := range []struct{ name, engine, want string }{
		{"app", "", "mariadb"}, {"app-mysql", "mysql-9.7", "mysql 9.7"}, {"app-maria", "mariadb", "mariadb"},
	} {
		var tpl tplJSON
		body := `{"name":"` + c.name + `","migrations_dir":"` + dir + `","engine":"` + c.engine + `"}`
		if code := d.call(t, "POST", "/v1/templates", body, &tpl); code != 200 || tpl.State != "TEMPLATE_STATE_READY" || !strings.HasPrefix(tpl.Engine, c.want) {
			t.Fatalf("ensure %s on engine %q: %d %+v", c.name, c.engine, code, tpl)
		}
		var l struct {
			DSN, Host string
			CACert    string `json:"ca_cert"`
		}
		d.postJSON(t, "/v1/leases", map[string]any{"template": c.name, "strategy": "STRATEGY_SNAPSHOT"}, &l)
		cfg, err := mysql.ParseDSN(l.DSN)
		if err != nil {
			t.Fatal(err)
		}
		// Every engine's servers are signed by the daemon's one authority,
		// and the lease's connection verifies with it.
		cas[l.CACert] = true
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM([]byte(l.CACert)) {
			t.Fatalf("lease of %s: no CA certificate: %q", c.name, l.CACert)
		}
		cfg.TLS = &tls.Config{RootCAs: roots, ServerName: l.Host, MinVersion: tls.VersionTLS12}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		var version string
		err = db.QueryRow("SELECT VERSION()").Scan(&version)
		db.Close()
		if err != nil {
			t.Fatalf("lease of %s: %v", c.name, err)
		}
		versions[c.name] = version
		if isMaria := strings.Contains(strings.ToLower(version), "mariadb"); isMaria != strings.HasPrefix(c.want, "mariadb") {
			t.Errorf("a lease of %s (engine %q) runs on %s", c.name, c.engine, version)
		}
	}
	t.Logf("server versions of the leases: %v", versions)
	kept, err := os.ReadFile(filepath.Join(state, "tls", tlsca.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for ca := range cas {
		if len(cas) != 1 || !strings.HasPrefix(string(kept), ca) {
			t.Errorf("the leases carry %d CA certificates; want the one in %s/tls", len(cas), state)
		}
	}
	var bad struct{ Message string }
	if code := d.call(t, "POST", "/v1/templates", `{"name":"pg","migrations_dir":"`+dir+`","engine":"postgres"}`, &bad); code != 400 ||
		!strings.Contains(bad.Message, "mysql-9.7") || !strings.Contains(bad.Message, "mariadb-10.11") {
		t.Errorf("an engine the daemon does not serve: %d %q", code, bad.Message)
	}
	var list struct {
		Instances []struct{ Engine, Provider string }
	}
	d.getJSON(t, "/v1/instances", &list)
	engines := map[string]string{}
	for _, in := range list.Instances {
		engines[in.Engine] = in.Provider
	}
	if engines["mariadb"] != "native" || engines["mysql"] != "docker" {
		t.Errorf("instances: %+v", list.Instances)
	}
	d.terminate(t, time.Minute)
	if ids := containersOf(t, state+"/engines/1"); len(ids) != 0 {
		t.Errorf("containers left after SIGTERM: %v", ids)
	}
}
