package testdbd_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSecurityClaimsNameTheirTests checks that every test docs/security.md
// names exists: a Go test function, or a test of the Python or PHP
// packages. A claim whose test was renamed or removed fails here.
func TestSecurityClaimsNameTheirTests(t *testing.T) {
	doc, err := os.ReadFile("docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`(Test[A-Za-z0-9_]+|test_[a-z0-9_]+|test[A-Z][A-Za-z0-9]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 10 {
		t.Fatalf("docs/security.md names %d tests: every claim should name its test", len(named))
	}
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^\s*(?:func|def|public function)\s+(Test[A-Za-z0-9_]+|test_[a-z0-9_]+|test[A-Z][A-Za-z0-9]+)\s*\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "third_party" || d.Name() == "api") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".py") || strings.HasSuffix(path, "Test.php")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("docs/security.md names %s, which no test defines", m[1])
		}
	}
}

// TestDockerRecipesLeaveMakeRunsPorts checks that the Docker recipes
// (docs/docker.md's docker run, compose.yaml, the CI script) publish the
// daemon on host ports other than the ones `make run` holds, so that a
// reader who follows the README from the top runs both without "address
// already in use", and that the recipes agree with each other.
func TestDockerRecipesLeaveMakeRunsPorts(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	find := func(name, text, pattern string) string {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%s: nothing matches %s", name, pattern)
		}
		return m[1]
	}
	readme := read("README.md")
	makeREST := find("README.md", readme, "make run +# start the daemon: REST on 127\\.0\\.0\\.1:(\\d+)")
	makeGRPC := find("README.md", readme, "make run +# start the daemon: REST on 127\\.0\\.0\\.1:\\d+, gRPC on 127\\.0\\.0\\.1:(\\d+)")
	if makeREST+":"+makeGRPC != "8080:9090" {
		t.Fatalf("the README says make run serves on %s and %s: update this test", makeREST, makeGRPC)
	}
	docker := read("docs/docker.md")
	_, run, _ := strings.Cut(docker, "docker run --rm -d --name testdbd ")
	run, _, _ = strings.Cut(run, "```")
	compose := read("compose.yaml")
	ci := read("examples/ci/testdbd-ci.sh")
	ports := []struct{ where, rest, grpc string }{
		{"docs/docker.md's docker run", find("docs/docker.md", run, `-p 127\.0\.0\.1:(\d+):8080`), find("docs/docker.md", run, `-p 127\.0\.0\.1:(\d+):9090`)},
		{"compose.yaml", find("compose.yaml", compose, `TESTDBD_HTTP_PORT:-(\d+)\}:8080`), find("compose.yaml", compose, `TESTDBD_GRPC_PORT:-(\d+)\}:9090`)},
		{"examples/ci/testdbd-ci.sh", find("examples/ci/testdbd-ci.sh", ci, `TESTDBD_HTTP_PORT:-(\d+)\}`), ""},
	}
	for _, p := range ports {
		if p.rest == makeREST || p.grpc == makeGRPC {
			t.Errorf("%s publishes the daemon on %s/%s, which make run holds (%s/%s)", p.where, p.rest, p.grpc, makeREST, makeGRPC)
		}
		if p.rest != ports[0].rest || p.grpc != "" && p.grpc != ports[0].grpc {
			t.Errorf("%s publishes the daemon on %s/%s, docs/docker.md on %s/%s: use the same ports", p.where, p.rest, p.grpc, ports[0].rest, ports[0].grpc)
		}
	}
	// The address the recipes' readers are told to use is the one published.
	addr := "TESTDBD_ADDR=127.0.0.1:" + ports[0].rest
	for name, text := range map[string]string{"docs/docker.md's docker run": run, "compose.yaml": compose} {
		if !strings.Contains(text, addr) {
			t.Errorf("%s does not say %s", name, addr)
		}
	}
}
