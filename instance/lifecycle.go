package instance

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/testdbd/testdbd"
)

// Lifecycle is the exit bookkeeping every provider's instance shares: Done
// is closed when the server has exited, Err says why when nobody stopped it
// on purpose, and Stop runs the provider's stopping work once. It is safe
// for concurrent use.
type Lifecycle struct {
	done     chan struct{}
	exitOnce sync.Once
	err      error // why it exited; written before done is closed

	mu       sync.Mutex
	stopping bool

	stopOnce sync.Once
	stopErr  error
}

// NewLifecycle returns the lifecycle of a server that is running.
func NewLifecycle() *Lifecycle { return &Lifecycle{done: make(chan struct{})} }

// Done is closed when the server has exited, for whatever reason.
func (l *Lifecycle) Done() <-chan struct{} { return l.done }

// Err says why the server exited when nobody stopped it; nil while it runs
// and after Stop.
func (l *Lifecycle) Err() error {
	select {
	case <-l.done:
		return l.err
	default:
		return nil
	}
}

// Exited records that the server has exited and closes Done. Unless the
// server is being stopped, why is called for the reason (it may read logs).
// Only the first call counts.
func (l *Lifecycle) Exited(why func() error) {
	l.exitOnce.Do(func() {
		if !l.Stopping() {
			l.err = why()
		}
		close(l.done)
	})
}

// Stopping reports whether Stop has been called.
func (l *Lifecycle) Stopping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopping
}

// Stop marks the server as stopped on purpose and runs stop the first time
// it is called; later calls return the first call's result.
func (l *Lifecycle) Stop(stop func() error) error {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.stopping = true
		l.mu.Unlock()
		l.stopErr = stop()
	})
	return l.stopErr
}

// State returns the instance state and, for a failed one, why it failed.
func (l *Lifecycle) State() (testdbd.InstanceState, string) {
	select {
	case <-l.done:
		if l.err != nil {
			return testdbd.InstanceFailed, l.err.Error()
		}
		return testdbd.InstanceStopped, ""
	default:
		if l.Stopping() {
			return testdbd.InstanceStopped, ""
		}
		return testdbd.InstanceRunning, ""
	}
}

// FreePort returns a TCP port free on the loopback interface now. Another
// process may take it before the caller binds it; providers retry a start
// that fails with "Address already in use".
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitReady pings the server at e every 10 ms until it answers; it fails
// when the server exits first (life's Done) or ctx ends, with the last log
// lines logTail returns.
func WaitReady(ctx context.Context, e testdbd.Endpoint, life *Lifecycle, logTail func() string) error {
	db, err := OpenAdmin(e, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-life.Done():
			if exit := life.Err(); exit != nil {
				return fmt.Errorf("server exited during start-up: %w", exit)
			}
			return fmt.Errorf("server exited during start-up; last log lines: %s", logTail())
		case <-ctx.Done():
			return fmt.Errorf("server did not answer within the start-up deadline: %w (last error: %w); last log lines: %s",
				ctx.Err(), err, logTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// StopAll stops servers at once and returns each one's error, in order:
// what a provider's Close does with the servers it started.
func StopAll[S interface{ Stop(context.Context) error }](ctx context.Context, servers []S) []error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Stop(ctx)
		}()
	}
	wg.Wait()
	return errs
}
