package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/testdbd/testdbd"
)

const usage = `testdbd: real MySQL/MariaDB databases for tests, leased per worker and reset in milliseconds.

Usage:
  testdbd serve [flags]     run the daemon (testdbd serve -h lists the flags)
  testdbd version           print the version

Client commands (each -h lists its flags):
` + cliUsage + `
Every flag can also be set in the environment as TESTDBD_<NAME>,
e.g. --http-addr as TESTDBD_HTTP_ADDR.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code.
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
		err = runServe(args[1:], stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "testdbd", testdbd.Version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "testdbd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "testdbd:", err)
		return 1
	}
	return 0
}
