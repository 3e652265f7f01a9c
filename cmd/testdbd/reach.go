package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/testdbd/testdbd"
)

// Reaching the servers from elsewhere: by default each server listens on
// 127.0.0.1 on a free port, and leases carry 127.0.0.1. In a container, or
// for clients on other hosts, --advertise-host names the host the leases
// carry (the servers then listen on every interface), and --server-ports
// gives the ports the servers take (a range the container publishes with
// the same numbers on the host).

// reachConfig is what `testdbd serve` is told about reaching its servers.
type reachConfig struct {
	AdvertiseHost string
	ServerPorts   portRange
}

func reachFlags(fs *flag.FlagSet, cfg *reachConfig) {
	fs.StringVar(&cfg.AdvertiseHost, "advertise-host", "", "the host leases carry (their DSN and URL) instead of 127.0.0.1; the servers then listen on every interface (native provider)")
	fs.Var(&cfg.ServerPorts, "server-ports", "ports the servers listen on, one each, e.g. 33060-33099, instead of free ports (native provider; publish them with the same numbers)")
}

// portRange is a flag value FIRST-LAST (or one port).
type portRange struct{ first, last int }

func (r *portRange) String() string {
	switch {
	case r == nil || r.first == 0:
		return ""
	case r.first == r.last:
		return strconv.Itoa(r.first)
	}
	return fmt.Sprintf("%d-%d", r.first, r.last)
}

func (r *portRange) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*r = portRange{}
		return nil
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		b = a
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return fmt.Errorf("ports %q: want FIRST-LAST within 1-65535, e.g. 33060-33099", s)
	}
	*r = portRange{first, last}
	return nil
}

func (r portRange) size() int {
	if r.first == 0 {
		return 0
	}
	return r.last - r.first + 1
}

// reachProvider applies reachConfig to a provider: the ports and bind
// address its servers get, and the host their leases carry.
func reachProvider(p testdbd.Provider, cfg reachConfig, maxInstances int) (testdbd.Provider, error) {
	if cfg.AdvertiseHost == "" && cfg.ServerPorts.size() == 0 {
		return p, nil
	}
	if p.Name() != "native" {
		return nil, fmt.Errorf("--advertise-host and --server-ports work with the native provider, and this daemon runs --provider %s: drop them, or run --provider native", p.Name())
	}
	if n := cfg.ServerPorts.size(); n > 0 && n < maxInstances {
		return nil, fmt.Errorf("--server-ports %s holds %d ports for up to --max-instances=%d servers: widen the range or lower --max-instances", &cfg.ServerPorts, n, maxInstances)
	}
	return &reachingProvider{Provider: p, cfg: cfg, used: map[int]bool{}}, nil
}

type reachingProvider struct {
	testdbd.Provider
	cfg  reachConfig
	mu   sync.Mutex
	used map[int]bool // ports of running servers
}

// Start starts a server on the first port of the range that is not taken,
// listening on every interface when leases carry another host.
func (p *reachingProvider) Start(ctx context.Context, opts testdbd.StartOptions) (testdbd.Instance, error) {
	if p.cfg.AdvertiseHost != "" {
		opts.BindAddress = "0.0.0.0"
		opts.TLSHosts = append(opts.TLSHosts, p.cfg.AdvertiseHost)
	}
	if p.cfg.ServerPorts.size() == 0 {
		inst, err := p.Provider.Start(ctx, opts)
		if err != nil {
			return nil, err
		}
		return &reachingInstance{Instance: inst, host: p.cfg.AdvertiseHost}, nil
	}
	var lastErr error
	for port := p.cfg.ServerPorts.first; port <= p.cfg.ServerPorts.last; port++ {
		if !p.take(port) {
			continue
		}
		opts.Port = port
		inst, err := p.Provider.Start(ctx, opts)
		if err == nil {
			go func() { <-inst.Done(); p.release(port) }()
			return &reachingInstance{Instance: inst, host: p.cfg.AdvertiseHost}, nil
		}
		p.release(port)
		if !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
		lastErr = err // taken by another program: try the next one
	}
	if lastErr == nil {
		lastErr = errors.New("every one is used by a server of this daemon")
	}
	return nil, testdbd.Errorf(testdbd.EExhausted, "no port of --server-ports %s is free (%v): widen the range or lower --max-instances", &p.cfg.ServerPorts, lastErr)
}

func (p *reachingProvider) take(port int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used[port] {
		return false
	}
	p.used[port] = true
	return true
}

func (p *reachingProvider) release(port int) {
	p.mu.Lock()
	delete(p.used, port)
	p.mu.Unlock()
}

// reachingInstance is a server whose leases carry the advertised host.
type reachingInstance struct {
	testdbd.Instance
	host string // "" keeps the provider's
}

func (s *reachingInstance) ClientAddr() (string, int) {
	host, port := s.Instance.ClientAddr()
	if s.host != "" {
		host = s.host
	}
	return host, port
}

func (s *reachingInstance) Info(ctx context.Context) testdbd.InstanceInfo {
	info := s.Instance.Info(ctx)
	if s.host != "" {
		info.Host = s.host
	}
	return info
}

// TLSNotAfter and RenewTLS pass the fleet's renewal to the server (see
// testdbd.TLSRenewer); one that cannot renew reports no certificate.
func (s *reachingInstance) TLSNotAfter() time.Time {
	if r, ok := s.Instance.(testdbd.TLSRenewer); ok {
		return r.TLSNotAfter()
	}
	return time.Time{}
}

func (s *reachingInstance) RenewTLS(ctx context.Context) error {
	if r, ok := s.Instance.(testdbd.TLSRenewer); ok {
		return r.RenewTLS(ctx)
	}
	return errors.New("the server cannot renew its TLS certificate")
}
