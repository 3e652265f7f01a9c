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
		l.ID, l.Database, l.Template, l.Host, l.Port, l.User, clock(l.ExpiresAt),
		time.Until(l.ExpiresAt).Round(time.Second), l.Resets)
	return err
}

// clock is a time as the command line prints it: in the local zone, with
// its offset from UTC ("Z" in UTC), e.g. 2026-05-04 14:03:22+02:00.
func clock(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05Z07:00") }

// clockTime is clock's time of day alone, e.g. 14:03:22+02:00.
func clockTime(t time.Time) string { return t.Local().Format("15:04:05Z07:00") }
