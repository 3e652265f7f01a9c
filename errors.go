package testdbd

import (
	"errors"
	"fmt"
)

// Error codes. The server maps each to a gRPC status code in one table.
const (
	EInternal    = "internal"    // a bug or an unexpected server error
	EInvalid     = "invalid"     // bad input from the caller
	ENotFound    = "not_found"   // no such template, lease or instance
	EConflict    = "conflict"    // the request clashes with the current state
	EExhausted   = "exhausted"   // a capacity limit was reached
	EUnavailable = "unavailable" // a server is down or not ready yet
	ETimeout     = "timeout"     // a deadline passed
	EAuth        = "auth"        // missing or wrong token
)

// Sentinel causes of ENotFound errors, so that each edge (REST, CLI, SDK)
// can say in its own terms how to create what is missing.
var (
	ErrNoTemplate = errors.New("no such template")
	ErrNoLease    = errors.New("no such lease")
)

// Error is an error with a code and a message meant for the user: it says
// what went wrong and what to do.
type Error struct {
	Code    string
	Message string // includes the cause's text when there is one
	Err     error  // the underlying cause, if any
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and formatted message. A
// trailing %w argument becomes the cause.
func Errorf(code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// EInternal if there is none.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// Wrapf adds context to err ("context: err") and keeps err's code, so that
// a timeout stays a timeout however many layers add to its message.
func Wrapf(err error, format string, args ...any) *Error {
	return &Error{Code: ErrorCode(err), Message: fmt.Sprintf(format, args...) + ": " + err.Error(), Err: err}
}
