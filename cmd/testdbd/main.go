package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/testdbd/testdbd"
)

const usage = `testdbd: real MySQL/MariaDB databases for tests, leased per worker and reset in milliseconds.

Usage:
  testdbd serve [flags]     run the daemon (testdbd serve -h lists its flags)
  testdbd version           print the version
  testdbd help [COMMAND]    this text, or a command's (the same as COMMAND -h)

Client commands (each -h lists its flags):
` + cliUsage + `
Environment:
  The daemon's flags are also read from TESTDBD_<NAME>, e.g. --http-addr
  from TESTDBD_HTTP_ADDR and --token from TESTDBD_TOKEN. The client
  commands read their connection settings only: TESTDBD_ADDR,
  TESTDBD_TOKEN and TESTDBD_TLS_CA. A flag on the command line wins.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code: 0 done, 1
// failed, 2 a mistake in the command line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if clientCommands[args[0]] {
		return runClientCommand(args[0], args[1:], stdout, stderr)
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(args[1:], stdout, stderr)
	case "version", "--version":
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help") {
			fmt.Fprintln(stdout, "usage: testdbd version\n\nPrints the version of this binary.")
			return 0
		}
		fmt.Fprintln(stdout, "testdbd", testdbd.Version)
	case "help", "-h", "--help", "-help":
		return runHelp(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "testdbd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "testdbd: %s\n(testdbd %s -h lists the flags)\n", ue.msg, args[0])
		return 2
	}
	fmt.Fprintln(stderr, "testdbd:", err)
	return 1
}

// runHelp prints the usage, or a command's: `testdbd help lease` is
// `testdbd lease -h`.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return 0
	}
	switch {
	case args[0] == "serve", args[0] == "version", clientCommands[args[0]]:
		return run(append(append([]string{}, args...), "-h"), stdout, stderr)
	}
	fmt.Fprintf(stderr, "testdbd: no command %q: the commands are serve, version, %s\n", strings.Join(args, " "), strings.Join(clientCommandNames, ", "))
	return 2
}
