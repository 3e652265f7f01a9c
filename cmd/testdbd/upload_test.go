package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/internal/testenv"
)

// memoryOf returns a process's resident set and its peak, from
// /proc/PID/status (VmRSS, VmHWM), in bytes.
func memoryOf(t *testing.T, pid int) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			fmt.Sscan(strings.TrimPrefix(line, "VmRSS:"), &kb)
			rss = kb << 10
		case strings.HasPrefix(line, "VmHWM:"):
			fmt.Sscan(strings.TrimPrefix(line, "VmHWM:"), &kb)
			peak = kb << 10
		}
	}
	return rss, peak
}

// TestUploadMemoryIsBounded: eight uploads of 60 MB at once (EnsureTemplate
// with the files' contents; four over REST, four over gRPC) take the
// daemon's memory up by a bounded amount whatever their number, since it
// holds at most --upload-memory of them at once, and the daemon gives the
// memory back once they are answered.
//
// The daemon is built without the race detector for this test: its shadow
// memory would be most of what is measured.
func TestUploadMemoryIsBounded(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "testdbd")
	if out, err := exec.Command("go", "build", "-o", plain, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the daemon: %v: %s", err, out)
	}
	d := startBinary(t, plain, testenv.StateDir(t), "--upload-memory", "128M")
	pid := d.cmd.Process.Pid
	before, _ := memoryOf(t, pid)

	files := []map[string]string{}
	for i := range 4 {
		files = append(files, map[string]string{"name": fmt.Sprintf("%05d_big.sql", i+1), "content": "-- +goose Up\n" + strings.Repeat("x", 15<<20)})
	}
	body, _ := json.Marshal(map[string]any{"name": "big", "migrations": files})
	req := &testdbv1.EnsureTemplateRequest{Name: "big"}
	for _, f := range files {
		req.Migrations = append(req.Migrations, &testdbv1.MigrationFile{Name: f["name"], Content: f["content"]})
	}
	conn, err := grpc.NewClient(d.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	api := testdbv1.NewTestDBServiceClient(conn)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			resp, err := http.Post("http://"+d.httpAddr+"/v1/templates", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("REST upload: %s, want 400 (over 48 MB in all)", resp.Status)
			}
		})
		wg.Go(func() {
			if _, err := api.EnsureTemplate(context.Background(), req); err == nil ||
				!strings.Contains(err.Error(), "in all") && !strings.Contains(err.Error(), "--upload-memory") {
				t.Errorf("gRPC upload: %v", err)
			}
		})
	}
	wg.Wait()
	_, peak := memoryOf(t, pid)
	t.Logf("daemon RSS: %d MiB before, %d MiB at the peak", before>>20, peak>>20)
	// Two uploads of 60 MB at a time, each held about twice (its body or
	// message, then the files), and the garbage the collector lets grow
	// to as much again: well under 1 GiB, where eight at once went
	// (1.5 GiB) when nothing bounded them.
	if grew := peak - before; grew > 768<<20 {
		t.Errorf("the daemon's memory grew by %d MiB for the uploads; want at most 768 MiB for --upload-memory=128M", grew>>20)
	}
	// And gives it back.
	var after int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		after, _ = memoryOf(t, pid)
		if after-before < 96<<20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("daemon RSS after the uploads: %d MiB", after>>20)
	if after-before >= 96<<20 {
		t.Errorf("the daemon holds %d MiB more than before the uploads, 30 s after they were answered", (after-before)>>20)
	}
}
