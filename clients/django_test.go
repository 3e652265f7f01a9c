package clients_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parallelLeases checks the line in which testdbd.django.TestRunner names
// the leases of `manage.py test --parallel n`: one per worker, each of its
// own database.
func parallelLeases(t *testing.T, out string, n int) {
	t.Helper()
	line := regexp.MustCompile(fmt.Sprintf(`testdbd: --parallel %d: .*`, n)).FindString(out)
	workers := regexp.MustCompile(`worker (\d+) on (\S+) \(lease (\S+)\)`).FindAllStringSubmatch(line, -1)
	dbs, leases := map[string]bool{}, map[string]bool{}
	for _, w := range workers {
		dbs[w[2]], leases[w[3]] = true, true
	}
	if len(workers) != n || len(dbs) != n || len(leases) != n {
		t.Errorf("manage.py test --parallel %d: want %d workers on as many leases and databases, got %q:\n%s", n, n, line, out)
	}
}

// djangoParallelFailures runs `manage.py test --parallel 4` of
// examples/django on tests/django/failing_django.py, whose tests fail, or
// kill their worker, or hang until the run is interrupted: every lease must
// be released and no worker process left running. The template django-app
// must be on the daemon (run.sh built it).
func djangoParallelFailures(t *testing.T, d *daemon, python, tests string) {
	dir := filepath.Join(repoRoot, "examples", "django")
	env := []string{"TESTDBD_ADDR=" + d.addr, "PYTHONPATH=" + tests, "PYTHONDONTWRITEBYTECODE=1"}
	manage := []string{"manage.py", "test", "--no-input", "--parallel", "4", "failing_django"}

	t.Run("tests fail", func(t *testing.T) {
		out, code := runCmd(t, dir, append(env, "TESTDBD_TEST_MODE=fail"), python, manage...)
		if code != 1 || !strings.Contains(out, "FAILED (failures=4, errors=4") {
			t.Fatalf("manage.py test --parallel 4 with failing tests: exit %d, want 1 with 4 failures and 4 errors:\n%s", code, out)
		}
		parallelLeases(t, out, 4)
		d.expectNoLeases(t, "manage.py test --parallel 4 with failing tests")
	})

	t.Run("a worker dies", func(t *testing.T) {
		// multiprocessing.Pool never returns the result of the test its
		// worker died in; the runner must stop rather than wait forever.
		ready := filepath.Join(t.TempDir(), "ready")
		out, code := runCmd(t, dir, append(env, "TESTDBD_TEST_MODE=crash", "TESTDBD_TEST_READY="+ready), python, manage...)
		if code == 0 || !strings.Contains(out, "a worker process of the parallel run died") {
			t.Fatalf("manage.py test --parallel 4 whose worker dies: exit %d, want the run stopped:\n%s", code, out)
		}
		d.expectNoLeases(t, "manage.py test --parallel 4 whose worker died")
	})

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out, pgid := interruptDjango(t, d, python, dir, env, manage, sig)
			d.expectNoLeases(t, "manage.py test --parallel 4 after "+sig.String())
			if left := lingering(pgid, 10*time.Second); len(left) > 0 {
				t.Errorf("worker processes %v still run 10 s after %v ended manage.py test:\n%s", left, sig, out)
			}
		})
	}
}

// interruptDjango starts manage.py test on the hanging tests, waits until
// each of the 4 workers runs one, sends sig to the runner (not to its
// workers, as a CI's timeout would) and waits for it to end. It returns the
// output and the process group the runner led.
func interruptDjango(t *testing.T, d *daemon, python, dir string, env, manage []string, sig syscall.Signal) (string, int) {
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// SIGINT is ignored in processes started in the background by a
	// non-interactive shell, and that is inherited: undo it, as a terminal's
	// Ctrl-C would find it.
	args := append([]string{"-c", `import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, [sys.executable] + sys.argv[1:])`}, manage...)
	cmd := command(ctx, dir, append(env, "TESTDBD_TEST_MODE=hang", "TESTDBD_TEST_READY="+ready), python, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(ready); err == nil && strings.Count(string(b), "\n") >= 4 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("manage.py test ended before its 4 workers ran the hanging tests: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hanging tests did not start within 2 minutes:\n%s", out.String())
		}
	}
	if n := len(d.leases(t)); n != 4 {
		t.Errorf("4 workers run, but the daemon lists %d leases", n)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("manage.py test exited 0 after %v:\n%s", sig, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("manage.py test did not end within a minute of %v:\n%s", sig, out.String())
	}
	return out.String(), cmd.Process.Pid
}

// lingering waits up to patience for a process group's processes to end
// and returns those still alive then. The workers get their SIGTERM as the
// runner dies (PR_SET_PDEATHSIG) and need a moment to act on it, longer on
// a loaded machine; a worker the runner failed to stop sleeps on for
// minutes, far past patience.
func lingering(pgid int, patience time.Duration) []int {
	deadline := time.Now().Add(patience)
	for {
		left := liveProcesses(pgid)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveProcesses lists the processes of a process group that are not
// zombies (a worker killed after its parent died waits for init to reap it).
func liveProcesses(pgid int) []int {
	var live []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, not ")".
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			live = append(live, pid)
		}
	}
	return live
}
