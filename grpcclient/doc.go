// Package grpcclient dials testdbd's gRPC API (testdb.v1.TestDBService):
// the generated, typed client, with the daemon's bearer token sent on every
// call. Programs that already use gRPC may prefer it; package client (a
// module of its own, github.com/testdbd/testdbd/client) talks to the same
// service over REST and pulls in no gRPC dependencies.
//
// It lives in the daemon's module, not the client's, because it imports
// the generated API types (api/), which import grpc, protobuf and the
// grpc-gateway runtime.
//
// For a daemon serving TLS (--tls-cert), pass the credentials as a dial
// option; they replace the plain-text default:
//
//	c, err := grpcclient.Dial("db.example:9090", token,
//		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
package grpcclient
