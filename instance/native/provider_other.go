//go:build !linux

package native

import (
	"context"
	"log/slog"

	"github.com/testdbd/testdbd"
)

// errLinuxOnly says why the native provider is missing and what to use.
var errLinuxOnly = testdbd.Errorf(testdbd.EUnavailable,
	"the native provider runs servers on Linux only (tmpfs mounts, parent-death signals): use --provider docker")

// Provider is the native provider, which this platform does not have.
type Provider struct{}

var _ testdbd.Provider = (*Provider)(nil)

// New fails: the native provider runs on Linux only.
func New(context.Context, Config) (*Provider, error) { return nil, errLinuxOnly }

// FindBinary fails, so that --provider auto picks docker.
func FindBinary(string) (string, error) { return "", errLinuxOnly }

// DetectEngine fails: no native server runs here.
func DetectEngine(context.Context, string) (testdbd.Engine, error) {
	return testdbd.Engine{}, errLinuxOnly
}

// RunBase is "": no native provider runs here.
func RunBase(string) (string, error) { return "", nil }

// SweepStateDir does nothing: no native provider runs here.
func SweepStateDir(context.Context, string, *slog.Logger) error { return nil }

// Name returns "native".
func (*Provider) Name() string { return "native" }

// Engine returns nothing: no native provider runs here.
func (*Provider) Engine() testdbd.Engine { return testdbd.Engine{} }

// Start fails: the native provider runs on Linux only.
func (*Provider) Start(context.Context, testdbd.StartOptions) (testdbd.Instance, error) {
	return nil, errLinuxOnly
}

// Close does nothing.
func (*Provider) Close(context.Context) error { return nil }
