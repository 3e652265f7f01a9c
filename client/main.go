package client

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartPolicy says whether Main starts a daemon for the package's tests
// when neither MainOptions.Addr nor TESTDBD_ADDR names one.
type StartPolicy int

// The start policies.
const (
	// StartIfNeeded uses a daemon that answers at DefaultAddr (e.g. one
	// started with `testdbd serve`), else starts one from PATH.
	StartIfNeeded StartPolicy = iota
	// StartAlways starts a daemon of the package's own, even when one
	// answers at DefaultAddr.
	StartAlways
	// StartNever uses only a daemon that answers at DefaultAddr.
	StartNever
)

// MainOptions configures Main.
type MainOptions struct {
	// Addr is the REST address of the daemon to use. Empty means
	// TESTDBD_ADDR; when that is empty too, Start decides.
	Addr string
	// Token is the daemon's bearer token; empty means TESTDBD_TOKEN. A
	// daemon Main starts reads TESTDBD_TOKEN as well.
	Token string
	// CAFile is the PEM file of the CA of the daemon's TLS certificate;
	// empty means TESTDBD_TLS_CA.
	CAFile string
	// Start says whether to start a daemon when no address is given.
	Start StartPolicy
	// Binary is the testdbd binary to start; empty means "testdbd" from
	// PATH.
	Binary string
	// ServeArgs are flags added to `testdbd serve` for a daemon Main starts,
	// e.g. []string{"--max-instances", "1"}.
	ServeArgs []string
	// Require fails the tests that need a database when no daemon can be
	// used, instead of skipping them. TESTDBD_REQUIRE=1 sets it too, for CI.
	Require bool
}

// Main runs the package's tests (m.Run) with a daemon for the helpers
// (TestDB, TestTx, TestLease, TestTxDSN) and returns m.Run's exit code.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { client.Main(m, client.MainOptions{}) }
//
// The daemon is found on the first helper call, so a run of tests that
// need none starts nothing: the one at MainOptions.Addr or TESTDBD_ADDR;
// else, by MainOptions.Start, one answering at DefaultAddr or one started
// from PATH as `testdbd serve` with a state directory of its own and free
// ports, stopped (with its servers) when the tests are done. When none can
// be used, the helpers skip their test and say why (or fail it, with
// Require or TESTDBD_REQUIRE=1). A daemon named by MainOptions.Addr or
// TESTDBD_ADDR that cannot be reached fails the tests instead, saying
// what to do: it was asked for. Helpers whose options name an Addr or a
// Client do not use Main's daemon.
func Main(m *testing.M, opts MainOptions) int {
	main := &daemonFinder{opts: opts}
	main.opts.Require = opts.Require || os.Getenv("TESTDBD_REQUIRE") == "1"
	mainState.Lock()
	mainState.finder = main
	mainState.Unlock()
	defer func() {
		mainState.Lock()
		mainState.finder = nil
		mainState.Unlock()
		main.stop()
	}()
	return m.Run()
}

// mainState is the daemon finder of the running Main, if any.
var mainState struct {
	sync.Mutex
	finder *daemonFinder
}

// foundDaemon is the daemon the helpers use.
type foundDaemon struct {
	addr    string // "" when Main is not in use: the helpers' own defaults apply
	require bool   // fail rather than skip when err is set
}

// mainDaemon returns the daemon Main found or started, finding it on first
// use; without Main it returns an empty foundDaemon.
func mainDaemon() (foundDaemon, error) {
	mainState.Lock()
	f := mainState.finder
	mainState.Unlock()
	if f == nil {
		return foundDaemon{}, nil
	}
	f.once.Do(f.find)
	return foundDaemon{addr: f.addr, require: f.opts.Require || f.named}, f.err
}

// daemonFinder finds or starts the daemon of one Main.
type daemonFinder struct {
	opts MainOptions
	once sync.Once
	addr string
	err  error

	named  bool          // addr was given (MainOptions.Addr, TESTDBD_ADDR): the tests fail rather than skip without it
	cmd    *exec.Cmd     // a daemon Main started
	exited chan struct{} // closed when it has exited
	dir    string        // its state directory and log
}

func (f *daemonFinder) find() {
	o := f.opts
	if addr := cmp.Or(o.Addr, os.Getenv("TESTDBD_ADDR")); addr != "" {
		f.addr = addr
		f.named = true
		f.err = f.check(addr)
		return
	}
	if o.Start != StartAlways {
		if f.answers(DefaultAddr) {
			f.addr = DefaultAddr
			return
		}
		if o.Start == StartNever {
			f.err = fmt.Errorf("no daemon answers at %s and MainOptions.Start is StartNever: start one (testdbd serve) or set TESTDBD_ADDR", DefaultAddr)
			return
		}
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("testdbd"); err != nil {
			why := "no daemon answers at " + DefaultAddr + " and"
			if o.Start == StartAlways {
				why = "MainOptions.Start is StartAlways, but"
			}
			f.err = fmt.Errorf("%s no testdbd is in PATH to start one: start one (testdbd serve), set TESTDBD_ADDR, "+
				"or install testdbd (go install ./cmd/testdbd in a checkout of github.com/testdbd/testdbd)", why)
			return
		}
	}
	f.addr, f.err = f.start(bin)
}

// check returns why the daemon named at addr cannot be used when it
// cannot be reached at all, saying what to do; other errors (a token
// refused, a template missing) come from the calls, with their reason. A
// daemon named and not answering fails the tests rather than skipping
// them: a CI job that sets TESTDBD_ADDR must not pass without its tests.
func (f *daemonFinder) check(addr string) error {
	c, err := sharedClient(addr, cmp.Or(f.opts.Token, os.Getenv("TESTDBD_TOKEN")), cmp.Or(f.opts.CAFile, os.Getenv("TESTDBD_TLS_CA")))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var u *UnreachableError
	if err := c.Health(ctx); !errors.As(err, &u) {
		return nil
	}
	named, unset := "TESTDBD_ADDR="+os.Getenv("TESTDBD_ADDR"), "unset TESTDBD_ADDR"
	if f.opts.Addr != "" {
		named, unset = "MainOptions.Addr "+f.opts.Addr, "leave MainOptions.Addr empty"
	}
	why := u.answeredWrong()
	if why == "" {
		why = fmt.Sprintf("nothing answers at %s (%s): start the daemon there (testdbd serve), correct the address, or %s to have client.Main use one at %s or start one",
			u.Addr, u.reason(), unset, DefaultAddr)
	}
	return fmt.Errorf("%s names the daemon for these tests, and %s (the tests fail rather than skip when the daemon named cannot be reached)", named, why)
}

// answers reports whether a testdbd daemon answers /healthz at addr.
func (f *daemonFinder) answers(addr string) bool {
	c, err := sharedClient(addr, cmp.Or(f.opts.Token, os.Getenv("TESTDBD_TOKEN")), cmp.Or(f.opts.CAFile, os.Getenv("TESTDBD_TLS_CA")))
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Health(ctx) == nil
}

// start runs `bin serve` with a state directory of its own and free ports,
// and returns its REST address once it serves.
func (f *daemonFinder) start(bin string) (string, error) {
	dir, err := os.MkdirTemp("", "tdbm") // short: Unix socket paths live under it
	if err != nil {
		return "", err
	}
	f.dir = dir
	logPath := filepath.Join(dir, "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	args := append([]string{"serve", "--state-dir", filepath.Join(dir, "state"), "--http-addr", "127.0.0.1:0",
		"--grpc-addr", "127.0.0.1:0", "--log-format", "json"}, f.opts.ServeArgs...)
	cmd := exec.Command(bin, args...)
	setParentDeathSignal(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return "", err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", fmt.Errorf("start %s serve: %w", bin, err)
	}
	f.cmd, f.exited = cmd, make(chan struct{})
	found := make(chan string, 1)
	go func() {
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			_, _ = logFile.Write(append(sc.Bytes(), '\n'))
			var entry struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Msg == "serving" && entry.URL != "" {
				select {
				case found <- entry.URL:
				default:
				}
			}
		}
		_, _ = io.Copy(logFile, stderr)
	}()
	go func() { _ = cmd.Wait(); close(f.exited) }()
	select {
	case url := <-found:
		fmt.Fprintf(os.Stderr, "testdbd: started a daemon for this test binary at %s (state and log in %s)\n", url, dir)
		return url, nil
	case <-f.exited:
		return "", fmt.Errorf("%s serve exited during start-up: %s", bin, logTail(logPath))
	case <-time.After(3 * time.Minute):
		return "", fmt.Errorf("%s serve did not start serving within 3 minutes: %s", bin, logTail(logPath))
	}
}

// stop stops a daemon Main started, with its servers, and removes its
// state directory.
func (f *daemonFinder) stop() {
	if f.cmd != nil {
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.exited:
		case <-time.After(time.Minute):
			_ = f.cmd.Process.Kill()
			<-f.exited
		}
	}
	if f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
}

// logTail returns the last lines of a daemon's JSON log, their messages
// and errors only.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	for i, l := range lines {
		var e struct {
			Msg string `json:"msg"`
			Err string `json:"err"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Msg != "" {
			lines[i] = strings.TrimSuffix(e.Msg+": "+e.Err, ": ")
		}
	}
	if len(lines) == 0 || lines[0] == "" {
		return "it wrote nothing"
	}
	return strings.Join(lines, " | ")
}
