package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/testdbd/testdbd/client"
)

// humanError is err as a person at a shell wants to read it: the daemon's
// own message with the fix named as a command line, or what to do when
// the daemon cannot be reached.
func humanError(err error) string {
	var unreachable *client.UnreachableError
	var apiErr *client.Error
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.As(err, &unreachable) && errors.As(err, &unknownCA):
		return fmt.Sprintf("cannot reach the testdbd daemon at %s: its TLS certificate is signed by an authority this machine does not trust: "+
			"give the CA certificate that signed it with --tls-ca or TESTDBD_TLS_CA", unreachable.Addr)
	case errors.As(err, &unreachable):
		// The Go package says where it takes the address; here it is a flag.
		return strings.Replace(unreachable.Error(), " (TESTDBD_ADDR for the test helpers, New's addr otherwise)", " with --addr or TESTDBD_ADDR", 1)
	case errors.As(err, &apiErr) && apiErr.Code == client.CodeUnauthenticated:
		return "the daemon wants a bearer token: set TESTDBD_TOKEN (or pass --token) to the token it was started with"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.As(err, &apiErr):
		return cliHints(apiErr.Message)
	}
	return err.Error()
}

var (
	// noTemplate is the daemon's "no template named ..." with its REST hint.
	noTemplate = regexp.MustCompile(`no template named "([^"]*)": create it with EnsureTemplate \(POST /v1/templates\)`)

	// restPhrases are the daemon's ways of fixing things in the REST API's
	// terms (its calls and request fields), and the same in this command
	// line's.
	restPhrases = strings.NewReplacer(
		"create it with EnsureTemplate (POST /v1/templates)", "create it with: testdbd template ensure --name NAME --migrations-dir DIR",
		"acquire one with AcquireLease (POST /v1/leases)", "lease one with: testdbd lease --template NAME",
		"fix the migrations and call EnsureTemplate again", "fix the migrations and run testdbd template ensure again",
		"wait for EnsureTemplate to return, then acquire", "wait for testdbd template ensure to finish, then lease",
		"or wait longer (wait_timeout_ms)", "or wait longer (--wait)",
		"or pass a longer wait_timeout_ms", "or pass a longer --wait",
		"or delete with force (which ends them)", "or delete with testdbd template delete --force (which ends them)",
		`upload the files in "migrations" for a remote daemon`, "pass --upload to send the files to a daemon on another host",
		"give migrations_dir (a directory on the daemon's host) instead of uploading the files", "leave out --upload (the daemon then reads --migrations-dir on its own host)",
		"give migrations_dir instead of uploading the files", "leave out --upload (the daemon then reads --migrations-dir on its own host)",
		"an EnsureTemplate call needs room", "a template ensure --upload needs room",
		"copy the file there, or upload it", "copy the file there, or pass --upload",
		"or lease without template_hash to take the current one", "or lease without --template-hash (and TESTDBD_TEMPLATE_HASH) to take the current one",
		"wait for it with GetTemplate or testdbd template wait", "wait for it with testdbd template wait",
		"(ttl_seconds, or the daemon's --build-timeout)", "(template ensure --build-timeout, or the daemon's --build-timeout)",
		"(build_timeout_seconds in the request, or the daemon's --build-timeout)", "(template ensure --build-timeout, or the daemon's --build-timeout)",
		"failed to build: seed_sql ", "failed to build: the seed (--seed-file) ",
		"begin one with BeginTemplateBuild", "run testdbd template ensure again",
	)

	// restFields are the daemon's messages that open with a request
	// field (at the start, or after a ": " of a wrapper), with its value,
	// and the same with this command line's flag. They are anchored so that
	// a user's own text inside a message, such as a migration's error
	// naming a column, is left alone.
	restFields = []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`(^|: )ttl_seconds (\d+): use 1 to (\d+) \(0 means (\d+)\)`), "${1}--ttl ${2}s: use 1s to ${3}s (without --ttl: ${4}s)"},
		{regexp.MustCompile(`(^|: )ttl_seconds (\d+): use 1 to (\d+)`), "${1}--ttl ${2}s: use 1s to ${3}s"},
		{regexp.MustCompile(`(^|: )wait_timeout_ms (\d+): use 0 \((\d+)\) up to (\d+)`), "${1}--wait ${2}ms: use up to ${4}ms (without --wait: ${3}ms)"},
		{regexp.MustCompile(`(^|: )build_timeout_seconds (\d+): use 0 \(the default, (\d+)\) up to (\d+)`), "${1}--build-timeout ${2}s: use up to ${4}s (without it: ${3}s)"},
		{regexp.MustCompile(`(^|: )pool_size (\d+):`), "${1}--pool-size ${2}:"},
		{regexp.MustCompile(`(^|: )(read )?migrations_dir "`), `${1}${2}--migrations-dir "`},
		{regexp.MustCompile(`(^|: )seed_sql is `), "${1}the --seed-file is "},
		{regexp.MustCompile(`(^|: )ttl_seconds and wait_timeout_ms must not be negative`), "${1}--ttl and --wait must not be negative"},
		{regexp.MustCompile(`(^|: )ttl_seconds must not be negative`), "${1}--ttl must not be negative"},
		{regexp.MustCompile(`(^|: )pool_size and ttl_seconds must not be negative`), "${1}--pool-size and --build-timeout must not be negative"},
	}
)

// cliHints rewrites the fixes a daemon message names in the REST API's
// terms (EnsureTemplate, POST /v1/templates, wait_timeout_ms) as this
// command line's.
func cliHints(msg string) string {
	msg = noTemplate.ReplaceAllString(msg, `no template named "$1": create it with: testdbd template ensure --name $1 --migrations-dir DIR`)
	for _, f := range restFields {
		msg = f.re.ReplaceAllString(msg, f.with)
	}
	return restPhrases.Replace(msg)
}
