package client_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/testdbd/testdbd/client"
)

// daemonAddr is the REST address of the daemon TestMain starts for the
// package's tests: a real testdbd serve with its own state directory and
// free ports, running MariaDB natively. daemonGRPCAddr is its gRPC address.
var daemonAddr, daemonGRPCAddr string

// daemonBinary is the testdbd binary TestMain built.
var daemonBinary string

// migrationsDir is the example template every test leases from.
const migrationsDir = "../examples/migrations"

func TestMain(m *testing.M) {
	flag.Parse() // testing.Verbose is read before m.Run
	os.Exit(runWithDaemon(m))
}

func runWithDaemon(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "tdbc") // short: Unix socket paths live under it
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "testdbd")
	daemonBinary = bin
	build := exec.Command("go", "build", "-o", bin, "./cmd/testdbd")
	build.Dir = ".." // the daemon's module, which uses this one through a replace directive
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the daemon: %v\n%s", err, out)
		return 1
	}
	cmd := exec.Command(bin, "serve", "--state-dir", filepath.Join(tmp, "state"), "--http-addr", "127.0.0.1:0",
		"--grpc-addr", "127.0.0.1:0", "--log-format", "json", "--max-instances", "1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	addr, grpcAddr, err := servingAddr(stderr, exited)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	daemonAddr, daemonGRPCAddr = addr, grpcAddr
	return m.Run()
}

// servingAddr reads the daemon's JSON log until it says where REST serves,
// then keeps draining the log (echoing it with -v) so the daemon never
// blocks on a full pipe.
func servingAddr(log io.Reader, exited <-chan struct{}) (rest, grpc string, err error) {
	found := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(log)
		for sc.Scan() {
			var entry struct {
				Msg  string `json:"msg"`
				HTTP string `json:"http"`
				GRPC string `json:"grpc"`
			}
			if testing.Verbose() {
				fmt.Fprintln(os.Stderr, sc.Text())
			}
			if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Msg == "serving" {
				found <- [2]string{entry.HTTP, entry.GRPC}
			}
		}
	}()
	select {
	case addrs := <-found:
		return addrs[0], addrs[1], nil
	case <-exited:
		return "", "", fmt.Errorf("the daemon exited during start-up")
	case <-time.After(2 * time.Minute):
		return "", "", fmt.Errorf("the daemon did not start serving within 2 minutes")
	}
}

// newClient returns a client of the package's daemon.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(daemonAddr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
