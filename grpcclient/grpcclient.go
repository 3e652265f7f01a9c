package grpcclient

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	testdbv1 "github.com/testdbd/testdbd/api/testdb/v1"
)

// Client is the typed gRPC client of one daemon. Close it when done.
type Client struct {
	testdbv1.TestDBServiceClient
	conn *grpc.ClientConn
}

// Dial connects to the daemon's gRPC address (e.g. "127.0.0.1:9090"). A
// non-empty token is sent as "authorization: Bearer <token>" on every call,
// as a daemon started with --token requires. The connection is plain text
// unless opts give transport credentials (a daemon started with
// --tls-cert), which replace the plain-text default.
func Dial(addr, token string, opts ...grpc.DialOption) (*Client, error) {
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(token)))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("testdbd gRPC address %q: %w", addr, err)
	}
	return &Client{TestDBServiceClient: testdbv1.NewTestDBServiceClient(conn), conn: conn}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// bearer sends the daemon's token with every call.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: a daemon on loopback serves plain text.
func (bearer) RequireTransportSecurity() bool { return false }
