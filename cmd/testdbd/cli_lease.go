package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/testdbd/testdbd/client"
)

// endedBefore reports whether a lease a release returned had ended before
// it: testdbd ended it (its TTL, its space, its server, a restart), or
// someone released it already.
func endedBefore(l *client.Lease) bool {
	return l.State != "released" || l.EndedReason != "" && !strings.HasPrefix(l.EndedReason, "released")
}

// leaseStatus prints one lease: until when it is leased, or why it ended
// and what to do.
func leaseStatus(ctx context.Context, c *cli, cl *client.Client, id string) error {
	l, err := cl.GetLease(ctx, id)
	if err != nil {
		return err
	}
	if c.format == "json" {
		return c.printJSON(l)
	}
	if l.State != "active" {
		_, err = fmt.Fprintf(c.stdout, "lease %s: %s: %s\n", l.ID, l.State, l.EndedReason)
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "lease %s: active: database %s of template %s at %s:%d, user %s, until %s (in %s), %d resets\n",
		l.ID, l.Database, l.Template, l.Host, l.Port, l.User, l.ExpiresAt.Local().Format(time.DateTime),
		time.Until(l.ExpiresAt).Round(time.Second), l.Resets)
	return err
}
