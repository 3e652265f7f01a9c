package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
	"github.com/testdbd/testdbd/server"
)

// replyService answers AcquireLease and ResetLease with replies shaped like
// real ones, at once: what the REST edge costs around the daemon's work.
type replyService struct{ echoService }

func (replyService) AcquireLease(context.Context, *testdbv1.AcquireLeaseRequest) (*testdbv1.AcquireLeaseResponse, error) {
	return &testdbv1.AcquireLeaseResponse{Lease: &testdbv1.Lease{
		Id: "l-0123456789abcdef", Template: "app", Strategy: testdbv1.Strategy_STRATEGY_SNAPSHOT, Worker: "w1",
		Database: "tdb_1748795c1f2a_w1", Host: "127.0.0.1", Port: 36227, User: "tdbu_abcdefghijkl", Password: "0123456789abcdefghijklmn",
		Dsn: "tdbu_abcdefghijkl:0123456789abcdefghijklmn@tcp(127.0.0.1:36227)/tdb_1748795c1f2a_w1",
		Url: "mysql://tdbu_abcdefghijkl:0123456789abcdefghijklmn@127.0.0.1:36227/tdb_1748795c1f2a_w1", InstanceId: "n-75035483",
	}}, nil
}

func (replyService) ResetLease(context.Context, *testdbv1.ResetLeaseRequest) (*testdbv1.ResetLeaseResponse, error) {
	return &testdbv1.ResetLeaseResponse{Report: &testdbv1.ResetReport{LeaseId: "l-0123456789abcdef", Strategy: testdbv1.Strategy_STRATEGY_SNAPSHOT,
		RequestedStrategy: testdbv1.Strategy_STRATEGY_SNAPSHOT, TotalMs: 3.5, TablesTotal: 100,
		Phases:      &testdbv1.ResetPhases{SessionsMs: 0.5, DetectMs: 0.8, RestoreMs: 2.2},
		TablesReset: []string{"audit_log", "post_counts", "posts", "users", "comments"}, Database: "tdb_1748795c1f2a_w1"}}, nil
}

// BenchmarkREST: the REST edge's own cost for an acquire and a reset,
// beside GET /healthz, from a keep-alive client over loopback (go test
// -bench REST ./server/ -cpuprofile cpu.out shows where it goes).
func BenchmarkREST(b *testing.B) {
	srv := server.New(server.Config{HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0"}, replyService{})
	if err := srv.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer srv.Close(context.Background())
	c := &http.Client{}
	for _, r := range []struct{ name, method, path, body string }{
		{"healthz", http.MethodGet, "/healthz", ""},
		{"acquire", http.MethodPost, "/v1/leases", `{"template":"app","strategy":"STRATEGY_SNAPSHOT"}`},
		{"reset", http.MethodPost, "/v1/leases/l-0123456789abcdef:reset", `{}`},
	} {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(r.method, srv.URL()+r.path, strings.NewReader(r.body))
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %s", r.path, resp.Status)
				}
			}
		})
	}
}
