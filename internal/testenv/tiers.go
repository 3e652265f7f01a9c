package testenv

// The test tiers. `make test` runs `go test -short`: the unit tests and the
// integration tests that need only the host's native server, in minutes.
// `make test-all` runs everything: the Docker and Kubernetes cells of the
// engine matrix, the all-in-one image, the dashboard in a browser, the
// Python and PHP packages and the examples. A test of the whole matrix
// skips in the quick tier, and in either tier when what it needs is
// missing, always naming the command that provides it: it never fails
// for want of an engine, an image, a cluster or a browser.

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// NeedFull skips tb in the quick tier (go test -short, which make test
// runs), saying that what is an integration of the whole matrix that
// make test-all runs.
func NeedFull(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("%s: not in the quick tier (go test -short, make test); make test-all runs it", what)
	}
}

// NeedCommand skips tb when the command named is not installed, saying
// which command installs it.
func NeedCommand(tb testing.TB, name, install string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Skipf("%s is not installed: %s installs it (make test-all does)", name, install)
	}
	return p
}

var (
	imagesMu sync.Mutex
	images   = map[string]string{} // image → why it cannot be used; "" when present
)

// NeedImage skips tb in the quick tier, when no Docker engine is reachable
// and when image is not present locally, naming the make target that
// builds it. It disables Ryuk like DockerAvailable.
func NeedImage(tb testing.TB, image string) {
	tb.Helper()
	NeedFull(tb, "Docker image "+image)
	if ok, why := ImageUsable(image); !ok {
		tb.Skip(why)
	}
}

// ImageUsable reports whether a Docker engine is reachable and image is
// present locally, and if not, why not, naming the command that helps.
// Unlike NeedImage it does not look at the tier.
func ImageUsable(image string) (bool, string) {
	if ok, reason := DockerAvailable(); !ok {
		return false, reason
	}
	imagesMu.Lock()
	defer imagesMu.Unlock()
	why, seen := images[image]
	if !seen {
		if err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).Run(); err != nil {
			why = "image " + image + " is not present locally: " + ImageHint(image)
		}
		images[image] = why
	}
	return why == "", why
}

// ImageHint names the command that builds image, or says that it must be
// loaded or pulled.
func ImageHint(image string) string {
	for _, d := range DockerImages {
		if d.Image == image {
			return "`" + d.Make + "` builds it (make test-all builds every image)"
		}
	}
	if strings.HasPrefix(image, "testdbd/testdbd") {
		return "`make image-testdbd` builds it (make test-all does)"
	}
	return "load or pull it, or unset TESTDBD_TEST_IMAGE"
}
