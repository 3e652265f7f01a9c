package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/internal/testenv"
)

// TestHardening: see testenv.CheckContainerHardening.
func TestHardening(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		p := newProvider(t, config(t, image))
		f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		s, err := f.Start(context.Background())
		if err != nil {
			t.Fatalf("fleet start: %v", err)
		}
		testenv.CheckContainerHardening(t, s)
	})
}

// TestTLSRenewal: a certificate near its end is replaced in the running
// container (testenv.CheckTLSRenewal).
func TestTLSRenewal(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		testenv.CheckTLSRenewal(t, newProvider(t, config(t, image)))
	})
}

// TestDeathReport: a server that dies says why, from its log, and its log
// is kept under the state directory after the container is removed; so
// does a server that cannot start.
func TestDeathReport(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		cfg := config(t, image)
		p := newProvider(t, cfg)
		inst := start(t, p)
		id := inst.Info(context.Background()).ContainerID
		if _, err := engine.ContainerKill(context.Background(), id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-inst.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed within 10 s of docker kill")
		}
		err := inst.Err()
		kept := keptLog(t, err, cfg.StateDir)
		if err := inst.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		b, rerr := os.ReadFile(kept)
		if rerr != nil || !strings.Contains(string(b), "ready for connections") {
			t.Errorf("kept log %s lacks the server's start (%v):\n%s", kept, rerr, b)
		}

		// A server that cannot start: the error says what the log says.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append(instance.Args(p.Engine(), instance.Config{}), "--no-such-option=1")
		_, err = p.Start(ctx, testdbd.StartOptions{Args: args})
		if err == nil {
			t.Fatal("a server with an unknown option started")
		}
		t.Logf("start failure: %v", err)
		if !strings.Contains(err.Error(), "[ERROR]") || !strings.Contains(err.Error(), "no-such-option") {
			t.Errorf("start failure does not say why: %v", err)
		}
		keptLog(t, err, cfg.StateDir)
	})
}

// keptLog returns the kept log an error names, checking it is under the
// state directory's crashes/.
func keptLog(t *testing.T, err error, stateDir string) string {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	i := strings.Index(msg, "kept at ")
	if i < 0 {
		t.Fatalf("the error names no kept log: %v", err)
	}
	path := strings.SplitN(msg[i+len("kept at "):], ";", 2)[0]
	if filepath.Dir(path) != filepath.Join(stateDir, "crashes") {
		t.Errorf("kept log %s not under %s/crashes", path, stateDir)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("kept log: %v", err)
	}
	return path
}
