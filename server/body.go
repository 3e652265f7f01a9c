package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The limits on REST request bodies. A body is read whole before the API
// sees it, so that a body over the limit is answered 413 and a stalled
// one is cut off, instead of either reaching the JSON decoder.
const (
	// MaxRequestBytes caps a request body (uploaded migrations and seeds
	// included), on REST and gRPC.
	MaxRequestBytes = 64 << 20
	// LargeBodyBytes is the size from which a body counts as a large
	// upload: it takes its size from the upload budget (budget.go) before
	// it is read.
	LargeBodyBytes = 1 << 20
	// DefaultBodyIdleTimeout is how long reading a body may go without
	// receiving a byte before the request is answered 408.
	DefaultBodyIdleTimeout = 10 * time.Second
)

// bodyReader reads REST request bodies within the limits above.
type bodyReader struct {
	idle   time.Duration
	budget *uploadBudget
}

func newBodyReader(idle time.Duration, budget *uploadBudget) *bodyReader {
	if idle <= 0 {
		idle = DefaultBodyIdleTimeout
	}
	return &bodyReader{idle: idle, budget: budget}
}

// wrap reads the whole body of each request (a large one within the
// upload budget, which it holds until the request is answered) and hands
// next a request whose body is in memory.
func (b *bodyReader) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > MaxRequestBytes {
			tooLarge(w)
			return
		}
		var held int64
		defer func() { b.budget.release(held) }()
		take := func(n int64) bool {
			if err := b.budget.acquire(r.Context(), n); err != nil {
				if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
					writeStatus(w, http.StatusTooManyRequests, codes.ResourceExhausted, st.Message())
				}
				return false // or the client is gone
			}
			held = n
			return true
		}
		if r.ContentLength > LargeBodyBytes && !take(r.ContentLength) {
			return
		}
		// A body of unknown length takes the most a body may be once it
		// passes LargeBodyBytes, and keeps its size once it is read.
		body, err := b.read(w, r, func() bool { return held > 0 || take(MaxRequestBytes) })
		switch {
		case errors.Is(err, errTooLarge):
			tooLarge(w)
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			writeStatus(w, http.StatusRequestTimeout, codes.DeadlineExceeded, fmt.Sprintf(
				"the request body stalled: nothing arrived for %s while reading it, so the daemon stopped waiting; send the whole body without pauses", b.idle))
			return
		case errors.Is(err, errGone):
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			writeStatus(w, http.StatusBadRequest, codes.InvalidArgument, "reading the request body: "+err.Error())
			return
		}
		if held > int64(len(body)) {
			b.budget.release(held - int64(len(body)))
			held = int64(len(body))
		}
		r.Body = &memBody{b: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// memBody is a request body read into memory. It lets go of the bytes
// once they are read (the decoder takes them whole, see restJSON), so that
// they can be collected while a long call (a template's build) runs.
type memBody struct{ b []byte }

func (m *memBody) Read(p []byte) (int, error) {
	if len(m.b) == 0 {
		m.b = nil
		return 0, io.EOF
	}
	n := copy(p, m.b)
	m.b = m.b[n:]
	return n, nil
}

// take returns the unread bytes and lets go of them.
func (m *memBody) take() []byte {
	b := m.b
	m.b = nil
	return b
}

func (m *memBody) Close() error { return nil }

var (
	errTooLarge = errors.New("request body too large")
	errGone     = errors.New("the client went away while waiting for the upload budget")
)

// read reads r's body with a deadline renewed before every read, so that a
// body that keeps arriving is read however long it takes, but one that
// stops is cut off after b.idle. Once the body grows past LargeBodyBytes it
// calls large, which waits for the upload budget.
func (b *bodyReader) read(w http.ResponseWriter, r *http.Request, large func() bool) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadlines := true
	defer func() {
		if deadlines {
			// No deadline for what follows: with the body read, the server
			// watches the connection in the background, and a deadline left
			// set would end the request's context while a long call runs.
			_ = rc.SetReadDeadline(time.Time{})
		}
	}()
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	// Most bodies are small and say their length: a chunk of that size
	// (and a byte more, for the end) instead of 32 KiB allocated and
	// cleared for every request.
	size := 32 << 10
	if r.ContentLength > 0 && r.ContentLength < int64(size) {
		size = int(r.ContentLength) + 1
	}
	chunk := make([]byte, size)
	for {
		if deadlines && rc.SetReadDeadline(time.Now().Add(b.idle)) != nil {
			deadlines = false // a connection without deadlines (e.g. a test's recorder)
		}
		n, err := r.Body.Read(chunk)
		buf.Write(chunk[:n])
		if buf.Len() > MaxRequestBytes {
			return nil, errTooLarge
		}
		if n > 0 && buf.Len() > LargeBodyBytes && buf.Len()-n <= LargeBodyBytes && !large() {
			return nil, errGone
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeStatus(w, http.StatusRequestEntityTooLarge, codes.ResourceExhausted, fmt.Sprintf(
		"the request body is larger than %d MiB: give migrations_dir (a directory on the daemon's host) instead of uploading the files, or upload fewer or smaller files",
		MaxRequestBytes>>20))
}

// writeStatus writes an error the way the REST API writes its own: a JSON
// status with the gRPC code and a message.
func writeStatus(w http.ResponseWriter, httpStatus int, code codes.Code, msg string) {
	b, _ := json.Marshal(struct {
		Code    codes.Code `json:"code"`
		Message string     `json:"message"`
		Details []any      `json:"details"`
	}{code, msg, []any{}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_, _ = w.Write(append(b, '\n'))
}
