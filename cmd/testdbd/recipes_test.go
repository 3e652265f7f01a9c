package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docRecipe returns the shell block of doc that builds a template with
// `testdbd template ensure ... --format env`.
func docRecipe(t *testing.T, doc string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(b), "```sh\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if strings.Contains(block, "testdbd template ensure") && strings.Contains(block, "--format env") {
			return block
		}
	}
	t.Fatalf("docs/%s has no shell block with testdbd template ensure --format env", doc)
	return ""
}

// TestDocsTemplateRecipesStopOnFailure runs the template recipes of the
// Laravel and Django guides where they fail (a directory without the
// project's files) and checks that the failure stops the script, with the
// command's message, rather than going on without TESTDBD_TEMPLATE.
func TestDocsTemplateRecipesStopOnFailure(t *testing.T) {
	for _, doc := range []string{"laravel.md", "django.md"} {
		t.Run(doc, func(t *testing.T) {
			script := docRecipe(t, doc) + "echo \"went on with TESTDBD_TEMPLATE=[$TESTDBD_TEMPLATE]\"\n"
			cmd := exec.Command("bash", "-c", script)
			cmd.Dir = t.TempDir() // not a project: no migrations to hash
			cmd.Env = append(os.Environ(), pathWithBinary(), "TESTDBD_ADDR=127.0.0.1:1", "TESTDBD_TEMPLATE=")
			out, err := cmd.CombinedOutput()
			if err == nil || strings.Contains(string(out), "went on") {
				t.Fatalf("the recipe went on after testdbd template ensure failed (%v):\n%s\n%s", err, script, out)
			}
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("exit status %d, want testdbd's 2 (a usage error)", code)
			}
			if want := "testdbd: --hash-files: no file matches "; !strings.Contains(string(out), want) || strings.Count(string(out), "--hash-files") != 1 {
				t.Errorf("want %q, naming the flag once:\n%s", want, out)
			}
		})
	}
}
