package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLargeBodiesWaitForASlot: with a budget for one large upload, a
// second waits until the first request is done, and small ones never wait.
func TestLargeBodiesWaitForASlot(t *testing.T) {
	b := newBodyReader(time.Minute, newUploadBudget(LargeBodyBytes+1))
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	entered := make(chan string, 3)
	srv := httptest.NewServer(b.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		entered <- r.URL.Path
		if r.URL.Path == "/first" {
			<-release
		}
		_, _ = w.Write(body[:min(len(body), 4)])
	})))
	defer srv.Close()

	large := strings.Repeat("x", LargeBodyBytes+1)
	done := make(chan string, 2)
	send := func(path, body string) {
		resp, err := http.Post(srv.URL+path, "text/plain", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		resp.Body.Close()
		done <- path
	}
	go send("/first", large)
	if got := <-entered; got != "/first" {
		t.Fatalf("entered %s", got)
	}
	go send("/second", large)
	for b.budget.wait.Load() != 1 { // the second upload waits for the slot
		time.Sleep(time.Millisecond)
	}
	send("/small", "tiny") // not held back
	if got := <-done; got != "/small" {
		t.Fatalf("done %s before /small", got)
	}
	if got := <-entered; got != "/small" {
		t.Fatalf("entered %s, want /small", got)
	}
	once.Do(func() { close(release) })
	if got := <-entered; got != "/second" {
		t.Errorf("entered %s, want /second once /first was done", got)
	}
	for range 2 {
		if got := <-done; got != "/first" && got != "/second" {
			t.Error(got)
		}
	}
}
