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
