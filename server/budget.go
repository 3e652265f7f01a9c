package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
)

// DefaultUploadMemory is the default budget of request bytes in flight
// (Config.UploadMemory): two bodies of the largest size at once, and any
// number of the usual few megabytes.
const DefaultUploadMemory = 2 * MaxRequestBytes

// uploadBudget bounds the bytes of large requests (uploaded migrations)
// that the daemon holds at once, REST and gRPC together. A REST request
// with a body over LargeBodyBytes takes its size from the budget before
// its body is read, waiting for it in turn, and gives it back when it is
// answered; a gRPC EnsureTemplate call takes the largest size a message
// may have when its stream opens (its size is not known before it is
// read), or is refused with ResourceExhausted when the budget cannot hold
// it, and keeps only its message's size once that is decoded. The bytes
// a request holds are then its body, the messages decoded from it and
// the migrations handed to the build: about twice its size at their peak
// and once while its build runs. Once the budget is free again after
// large requests, the memory they took is given back to the operating
// system (debug.FreeOSMemory): the Go runtime would otherwise keep it for
// minutes.
type uploadBudget struct {
	size  int64
	sem   *semaphore.Weighted
	held  atomic.Int64 // bytes taken
	peak  atomic.Int64 // most bytes ever taken at once
	wait  atomic.Int32 // requests waiting for bytes
	freed atomic.Int64 // bytes given back since memory was last returned
	// freeing: a goroutine returns memory to the operating system.
	freeing atomic.Bool
}

// freeAfter is how many bytes large requests must have given back before
// their memory is returned to the operating system.
const freeAfter = 16 << 20

func newUploadBudget(size int64) *uploadBudget {
	if size <= 0 {
		size = DefaultUploadMemory
	}
	return &uploadBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// tooBig is the error for a request larger than the whole budget.
func (b *uploadBudget) tooBig(n int64) string {
	return fmt.Sprintf("the request's %d MiB are more than the daemon holds of requests at once (--upload-memory=%dM): "+
		"give migrations_dir (a directory on the daemon's host) instead of uploading the files, upload fewer or smaller files, or raise --upload-memory",
		n>>20, b.size>>20)
}

// acquire takes n bytes, waiting until they are free or ctx ends.
func (b *uploadBudget) acquire(ctx context.Context, n int64) error {
	if n > b.size {
		return status.Error(codes.ResourceExhausted, b.tooBig(n))
	}
	b.wait.Add(1)
	err := b.sem.Acquire(ctx, n)
	b.wait.Add(-1)
	if err != nil {
		return err
	}
	b.took(n)
	return nil
}

// tryAcquire takes n bytes if they are free now.
func (b *uploadBudget) tryAcquire(n int64) bool {
	if !b.sem.TryAcquire(n) {
		return false
	}
	b.took(n)
	return true
}

func (b *uploadBudget) took(n int64) {
	held := b.held.Add(n)
	for {
		p := b.peak.Load()
		if held <= p || b.peak.CompareAndSwap(p, held) {
			return
		}
	}
}

// release gives n bytes back.
func (b *uploadBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.held.Add(-n)
	b.sem.Release(n)
	if b.freed.Add(n) >= freeAfter && b.held.Load() == 0 && b.freeing.CompareAndSwap(false, true) {
		go b.freeMemory()
	}
}

// freeMemory returns the memory of large requests to the operating system
// (a garbage collection, then the heap's free pages), once none is held.
func (b *uploadBudget) freeMemory() {
	defer b.freeing.Store(false)
	if b.held.Load() == 0 && b.freed.Swap(0) >= freeAfter {
		debug.FreeOSMemory()
	}
}

// grpcHold is what a gRPC call holds of the budget.
type grpcHold struct {
	b    *uploadBudget
	mu   sync.Mutex
	held int64
}

// keep shrinks the hold to n bytes.
func (h *grpcHold) keep(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n < h.held {
		h.b.release(h.held - n)
		h.held = n
	}
}

type grpcHoldKey struct{}

// tap admits a gRPC EnsureTemplate call of an authorized caller when the
// budget can hold the largest message, before the message is read; it
// runs on the connection's reader, so it never waits. The hold is given
// back when the call's stream ends.
func (b *uploadBudget) tap(ctx context.Context, info *tap.Info, authorized func(header string) bool) (context.Context, error) {
	if info.FullMethodName != testdbv1.TestDBService_EnsureTemplate_FullMethodName {
		return ctx, nil
	}
	var header string
	if v := info.Header.Get("authorization"); len(v) > 0 {
		header = v[0]
	}
	if !authorized(header) {
		return ctx, status.Error(codes.Unauthenticated, authHelp+" (gRPC metadata \"authorization\")")
	}
	if !b.tryAcquire(MaxRequestBytes) {
		return ctx, status.Errorf(codes.ResourceExhausted,
			"the daemon holds %d MiB of uploads, and an EnsureTemplate call needs room for a message of up to %d MiB before it is read (--upload-memory=%dM): "+
				"call again when uploads in flight are done, give migrations_dir instead of uploading the files, or raise --upload-memory",
			b.held.Load()>>20, MaxRequestBytes>>20, b.size>>20)
	}
	h := &grpcHold{b: b, held: MaxRequestBytes}
	context.AfterFunc(ctx, func() { h.keep(0) })
	return context.WithValue(ctx, grpcHoldKey{}, h), nil
}

// unary shrinks an EnsureTemplate call's hold to its decoded message's size.
func (b *uploadBudget) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if h, ok := ctx.Value(grpcHoldKey{}).(*grpcHold); ok {
		if m, ok := req.(proto.Message); ok {
			h.keep(int64(proto.Size(m)))
		}
	}
	return handler(ctx, req)
}
