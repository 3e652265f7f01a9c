package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/testdbd/testdbd"
)

// codeTable maps testdbd error codes to gRPC codes (grpc-gateway maps those
// to HTTP: NotFound 404, InvalidArgument 400, FailedPrecondition 400,
// ResourceExhausted 429, Unavailable 503, DeadlineExceeded 504).
var codeTable = map[string]codes.Code{
	testdbd.EInvalid:     codes.InvalidArgument,
	testdbd.ENotFound:    codes.NotFound,
	testdbd.EConflict:    codes.FailedPrecondition,
	testdbd.EExhausted:   codes.ResourceExhausted,
	testdbd.EUnavailable: codes.Unavailable,
	testdbd.ETimeout:     codes.DeadlineExceeded,
	testdbd.EAuth:        codes.Unauthenticated,
	testdbd.EInternal:    codes.Internal,
}

// toStatus turns a domain error into a gRPC status error.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	msg := err.Error()
	switch {
	case errors.Is(err, testdbd.ErrNoTemplate):
		msg += ": create it with EnsureTemplate (POST /v1/templates)"
	case errors.Is(err, testdbd.ErrNoLease):
		msg += ": acquire one with AcquireLease (POST /v1/leases)"
	}
	return status.Error(codeTable[testdbd.ErrorCode(err)], msg)
}
