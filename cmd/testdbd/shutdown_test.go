package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/internal/testenv"
)

// shutdownArgs are the flags that run the daemon on cell c, or it skips.
func shutdownArgs(t *testing.T, c testenv.Provider, state string) []string {
	t.Helper()
	switch c.Kind {
	case "native":
		return []string{"--provider", "native"}
	case "docker":
		testenv.NeedImage(t, c.Image)
		removeContainersAtEnd(t, state)
		return []string{"--provider", "docker", "--image", c.Image}
	case "kubernetes":
		t.Skip("the daemon is run on Kubernetes by kubernetes_daemon_test.go; this test runs it on the native and Docker cells")
	}
	c.New(t) // an unknown cell: fails, naming the cells
	return nil
}

// TestShutdownDuringBuild: SIGTERM while templates build (one waited for
// by its client, one in the background) stops the builds at once: the
// waiting client gets Unavailable (503) saying that the daemon is
// shutting down, nothing new starts after the shutdown began (no build,
// no server, no replica for a pool to fill), the daemon exits 0 within its
// --shutdown-timeout, and every server, tmpfs mount, container and
// instance directory is gone, however long the build would have run.
func TestShutdownDuringBuild(t *testing.T) {
	for _, c := range testenv.Providers() {
		t.Run(c.Name, func(t *testing.T) {
			state := testenv.StateDir(t)
			args := shutdownArgs(t, c, state)
			// One database per server and two per pool: a template that became
			// ready would want a second server and a replica on it.
			args = append(args, "--shutdown-timeout", "6s", "--max-instances", "2", "--max-databases-per-instance", "1", "--pool-size", "2")
			d := startDaemon(t, state, args...)
			template := func(name string, sleep int, async bool) string {
				return fmt.Sprintf(`{"name":%q,"async":%v,"migrations":[`+
					`{"name":"00001_t.sql","content":"-- +goose Up\nCREATE TABLE t (id INT PRIMARY KEY);\n"},`+
					`{"name":"00002_wait.sql","content":"-- +goose Up\nDO SLEEP(%d);\n"}]}`, name, async, sleep)
			}
			type answer struct {
				code int
				body struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
			}
			waited := make(chan answer, 1)
			go func() {
				var a answer
				a.code = d.callNoFail("POST", "/v1/templates", template("slow", 600, false), &a.body)
				waited <- a
			}()
			var quick struct{ State string }
			if code := d.call(t, "POST", "/v1/templates", template("quick", 3, true), &quick); code != 200 {
				t.Fatalf("async ensure: %d", code)
			}
			for _, name := range []string{"slow", "quick"} {
				deadline := time.Now().Add(2 * time.Minute)
				for {
					var tpl struct {
						State    string
						Progress struct{ Migration string }
					}
					d.call(t, "GET", "/v1/templates/"+name, "", &tpl)
					if tpl.Progress.Migration == "00002_wait.sql" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("template %s did not reach its slow migration: %+v", name, tpl)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}

			if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case a := <-waited:
				if a.code != http.StatusServiceUnavailable || a.body.Code != 14 || !strings.Contains(a.body.Message, "shutting down") {
					t.Errorf("the client waiting for the build got %d %+v, want 503 (Unavailable) saying that the daemon is shutting down", a.code, a.body)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("the client waiting for the build got no answer")
			}
			select {
			case <-d.exited:
			case <-time.After(2 * time.Minute):
				t.Fatal("the daemon did not exit after SIGTERM")
			}
			if code := d.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit code %d after SIGTERM", code)
			}
			if c.Kind == "docker" {
				if ids := containersOf(t, state); len(ids) != 0 {
					t.Errorf("containers left after SIGTERM: %v", ids)
				}
			}
			waitNoLeftovers(t, state)
			checkShutdownLog(t, d.logLines())
		})
	}
}

// checkShutdownLog finds, in the log after "shutting down", no new work
// and no error.
func checkShutdownLog(t *testing.T, lines []string) {
	t.Helper()
	began := false
	for _, line := range lines {
		var e struct{ Msg, Level string }
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e.Msg == "shutting down" {
			began = true
			continue
		}
		if !began {
			continue
		}
		switch {
		case e.Level == "ERROR":
			t.Errorf("an error after the shutdown began: %s", line)
		case e.Msg == "building template" || e.Msg == "building a template replica" || e.Msg == "starting a server on demand" ||
			e.Msg == "server started" || e.Msg == "template ready":
			t.Errorf("new work after the shutdown began: %s", line)
		}
	}
	if !began {
		t.Error(`the daemon did not log "shutting down"`)
	}
}

// callNoFail is call for another goroutine than the test's: it returns
// the status code, or 0 when the call got no answer.
func (p *proc) callNoFail(method, path, body string, v any) int {
	req, err := http.NewRequest(method, "http://"+p.httpAddr+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(v)
	return resp.StatusCode
}
