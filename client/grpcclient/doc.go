// Package grpcclient dials testdbd's gRPC API (testdb.v1.TestDBService):
// the generated, typed client, with the daemon's bearer token sent on every
// call. Programs that already use gRPC may prefer it; package client talks
// to the same service over REST and pulls in no gRPC dependencies.
package grpcclient
