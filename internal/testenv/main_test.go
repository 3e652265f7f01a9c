package testenv_test

import (
	"os"
	"testing"

	"github.com/testdbd/testdbd/internal/testenv"
)

// TestMain removes the package's cache of initialized datadirs after its
// tests.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemovePristine()
	os.Exit(code)
}
