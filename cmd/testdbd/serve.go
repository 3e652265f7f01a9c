package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/instance/kubernetes"
	"github.com/testdbd/testdbd/instance/native"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/lease"
	"github.com/testdbd/testdbd/server"
)

// serveConfig is everything `testdbd serve` is told by flags or environment.
type serveConfig struct {
	HTTPAddr          string
	GRPCAddr          string
	StateDir          string
	Provider          string
	Warm              int
	MaxInstances      int
	MaxDatabases      int
	MaxDBsPerInstance int
	MemoryBudget      byteSize
	UploadMemory      byteSize
	Token             string
	Insecure          bool
	TLSCert           string
	TLSKey            string
	Mysqld            string
	Image             string
	EngineImages      stringList
	Kubeconfig        string
	Namespace         string
	K8sService        bool
	K8sOwner          string
	AllowDisk         bool
	DatadirRoot       string
	TmpfsSize         byteSize
	BufferPool        byteSize
	PoolSize          int
	PoolIdle          time.Duration
	StaleBuild        time.Duration
	CacheDir          string
	CacheSize         byteSize
	Clones            int
	Strategy          string
	DefaultTTL        time.Duration
	MaxTTL            time.Duration
	DefaultWait       time.Duration
	MaxWait           time.Duration
	LeaseConns        int
	MaxLeaseConns     int
	BuildTimeout      time.Duration
	MaxBuildTimeout   time.Duration
	MaxBuilds         int
	MigrationsRoot    string
	LeaseSpace        byteSize
	SpaceReserve      byteSize
	LogFormat         string
	LogLevel          string
	ShutdownTimeout   time.Duration
	Reach             reachConfig

	// serverCA signs the TLS certificates of the --engine-image servers:
	// the authority of the top state directory, as the default provider's
	// servers have. nil: the provider's own (of its state directory).
	serverCA *tlsca.Authority
}

func serveFlags(cfg *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:8080", "REST address (port 0 picks a free port)")
	fs.StringVar(&cfg.GRPCAddr, "grpc-addr", "127.0.0.1:9090", "gRPC address (port 0 picks a free port)")
	fs.StringVar(&cfg.StateDir, "state-dir", defaultStateDir(), "directory for the pristine datadir, instance records and mounts")
	fs.StringVar(&cfg.Provider, "provider", "auto", "how servers run: auto, native, docker or kubernetes")
	fs.IntVar(&cfg.Warm, "warm", 0, "servers to start at once")
	fs.IntVar(&cfg.MaxInstances, "max-instances", 2, "most servers running at once")
	fs.IntVar(&cfg.MaxDatabases, "max-databases", 64, "most worker databases in all")
	fs.IntVar(&cfg.MaxDBsPerInstance, "max-databases-per-instance", 32, "most worker databases on one server")
	cfg.MemoryBudget = 8 << 30
	fs.Var(&cfg.MemoryBudget, "memory-budget", "most memory for servers and their tmpfs datadirs (e.g. 4G)")
	cfg.UploadMemory = server.DefaultUploadMemory
	fs.Var(&cfg.UploadMemory, "upload-memory", "most bytes of large requests (uploaded migrations) held at once, REST and gRPC together; others wait (REST) or are refused (gRPC)")
	fs.StringVar(&cfg.Token, "token", "", "require 'Authorization: Bearer <token>' on every call except /healthz; prefer TESTDBD_TOKEN, since ps shows flags")
	fs.BoolVar(&cfg.Insecure, "insecure", false, "serve on an address other hosts can reach without a token (refused otherwise)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain): serve REST as HTTPS and gRPC with TLS; needs --tls-key")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&cfg.Mysqld, "mysqld", "", "server binary (mariadbd or mysqld); default: search PATH and /usr/sbin")
	fs.StringVar(&cfg.Image, "image", docker.DefaultImage, "server image for --provider docker (present locally: make image builds the default) or kubernetes (on the nodes or pullable)")
	fs.Var(&cfg.EngineImages, "engine-image", "serve another engine beside the default one, from this server image (repeatable; Docker containers, or pods with --provider kubernetes): templates name it with engine, e.g. mysql-9.7")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig for --provider kubernetes; default $KUBECONFIG, ~/.kube/config, then the pod's service account")
	fs.StringVar(&cfg.Namespace, "namespace", "", "namespace of the server pods; default the kubeconfig context's, or the daemon pod's own")
	fs.BoolVar(&cfg.K8sService, "k8s-service", false, "give each server pod a ClusterIP Service and hand leases its DNS name instead of the pod's IP")
	fs.StringVar(&cfg.K8sOwner, "k8s-owner", "", "label value marking this daemon's pods (deleted at its start); default a hash of the host name and --state-dir")
	fs.BoolVar(&cfg.AllowDisk, "allow-disk", false, "accept datadirs that are not on tmpfs (benchmark baselines)")
	fs.StringVar(&cfg.DatadirRoot, "datadir-root", "", "create datadirs here instead of a tmpfs mount per server (as root) or /dev/shm")
	cfg.TmpfsSize = native.DefaultTmpfsBytes
	fs.Var(&cfg.TmpfsSize, "tmpfs-size", "size of each server's tmpfs mount")
	cfg.BufferPool = byteSize(instance.DefaultConfig.BufferPoolBytes)
	fs.Var(&cfg.BufferPool, "buffer-pool", "innodb_buffer_pool_size of each server")
	fs.IntVar(&cfg.PoolSize, "pool-size", lease.DefaultPoolSize, "ready worker databases kept per template (a template's pool_size overrides it)")
	fs.DurationVar(&cfg.PoolIdle, "pool-idle", lease.DefaultIdleTrim, "idle time after which ready databases beyond a pool's target are dropped")
	fs.DurationVar(&cfg.StaleBuild, "stale-build", lease.DefaultStaleBuild, "how long a template build its name no longer points at stays leasable by hash after its last lease, ensure or acquire")
	fs.StringVar(&cfg.CacheDir, "cache-dir", "", "template cache: built templates are kept here and restored instead of rebuilt (default <state-dir>/template-cache; \"off\" disables it)")
	cfg.CacheSize = 4 << 30
	fs.Var(&cfg.CacheSize, "cache-size", "most space the template cache takes; the least recently used templates go first")
	fs.IntVar(&cfg.Clones, "clones", lease.DefaultClones, "worker databases created in parallel in the background")
	fs.StringVar(&cfg.Strategy, "strategy", "snapshot", "default reset strategy: truncate, snapshot or rollback")
	fs.DurationVar(&cfg.DefaultTTL, "lease-ttl", lease.DefaultTTL, "lease time to live when the request gives none")
	fs.DurationVar(&cfg.MaxTTL, "max-lease-ttl", lease.DefaultMaxTTL, "longest lease time to live accepted")
	fs.DurationVar(&cfg.DefaultWait, "wait-timeout", lease.DefaultWait, "how long an acquire waits for a free database when the request gives no wait_timeout_ms")
	fs.DurationVar(&cfg.MaxWait, "max-wait-timeout", lease.DefaultMaxWait, "longest wait_timeout_ms accepted")
	fs.IntVar(&cfg.LeaseConns, "lease-connections", lease.DefaultLeaseConns, "most connections a lease may have open at once (its request's max_connections may change it)")
	fs.IntVar(&cfg.MaxLeaseConns, "max-lease-connections", lease.DefaultMaxLeaseConn, "largest max_connections a lease may ask for; servers keep room for every lease at it")
	fs.DurationVar(&cfg.BuildTimeout, "build-timeout", lease.DefaultBuildTimeout, "time limit of a template's migrations and seed when the request gives none")
	fs.DurationVar(&cfg.MaxBuildTimeout, "max-build-timeout", lease.DefaultMaxBuild, "longest build_timeout_seconds accepted")
	fs.IntVar(&cfg.MaxBuilds, "max-builds", lease.DefaultMaxBuilds, "template builds run at once; others wait")
	cfg.LeaseSpace = lease.DefaultLeaseSpace
	fs.Var(&cfg.LeaseSpace, "lease-space", "most space a leased database's data files may take; a lease past it fails alone and its database is dropped")
	fs.Var(&cfg.SpaceReserve, "space-reserve", "free space kept on every server's datadir: below it the binary log is purged, then the lease that takes the most space (its files and its writes in the binary log) fails (0: a tenth of the datadir's size)")
	fs.StringVar(&cfg.MigrationsRoot, "migrations-root", "", "the directory a request's migrations_dir must lie in (default: the working directory; / allows any path the daemon can read)")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long SIGTERM's shutdown may take: builds stop at once, calls in flight get two thirds of it, stopping the servers the rest")
	reachFlags(fs, &cfg.Reach)
	return fs
}

// cacheDir is the template cache's directory: --cache-dir, by default
// under the state directory; "" when it is "off".
func cacheDir(cfg *serveConfig) string {
	switch cfg.CacheDir {
	case "off":
		return ""
	case "":
		return filepath.Join(cfg.StateDir, "template-cache")
	}
	return cfg.CacheDir
}

func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/testdbd"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "testdbd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "testdbd")
	}
	return filepath.Join(os.TempDir(), "testdbd")
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// runServe is `testdbd serve`: it runs the daemon until SIGTERM or SIGINT.
func runServe(args []string, stdout, stderr io.Writer) error {
	var cfg serveConfig
	if err := parseServeFlags(serveFlags(&cfg), args, stdout); err != nil {
		return err
	}
	log, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	d, err := openDaemon(ctx, cfg, log)
	if err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := d.Close(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// daemon is the wired daemon: provider, fleet, API server.
type daemon struct {
	log      *slog.Logger
	provider testdbd.Provider
	fleet    *instance.Fleet
	// extra are the providers and fleets of --engine-image, one per image.
	extraProviders []testdbd.Provider
	extraFleets    []*instance.Fleet
	manager        *lease.Manager
	// deaths is manager for the fleets' death reports, which come from
	// their servers' watchers while openDaemon may still be setting up.
	deaths atomic.Pointer[lease.Manager]
	server *server.API
}

// openDaemon validates cfg, starts the provider (cleaning up after a killed
// predecessor), starts --warm servers and begins serving.
func openDaemon(ctx context.Context, cfg serveConfig, log *slog.Logger) (_ *daemon, err error) {
	apiConfig, err := apiConfigOf(cfg, log)
	if err != nil {
		return nil, err
	}
	strategy, err := testdbd.ParseStrategy(cfg.Strategy)
	if err != nil {
		return nil, fmt.Errorf("--strategy: %w", err)
	}
	settings, err := serverSettings(cfg)
	if err != nil {
		return nil, err
	}
	d := &daemon{log: log}
	defer func() {
		if err != nil {
			_ = d.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := d.openProvider(ctx, cfg); err != nil {
		return nil, err
	}
	d.fleet = d.newFleet(d.provider, cfg.MaxInstances, settings)
	if err := d.openEngineImages(ctx, cfg, settings); err != nil {
		return nil, err
	}
	if err := d.startWarm(ctx, cfg.Warm); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.manager = lease.New(leaseConfig(&cfg, d, reg, log))
	d.deaths.Store(d.manager)
	d.manager.Open()
	svc := &server.Service{Manager: d.manager, DefaultStrategy: strategy}
	apiConfig.Registry = reg
	d.server = server.New(apiConfig, svc)
	if err := d.server.Open(ctx); err != nil {
		d.server = nil
		return nil, err
	}
	return d, nil
}

// apiConfigOf checks the server counts of cfg and returns the API's
// configuration, checked.
func apiConfigOf(cfg serveConfig, log *slog.Logger) (server.Config, error) {
	if cfg.Warm < 0 || cfg.MaxInstances < 1 {
		return server.Config{}, errors.New("--warm must be ≥ 0 and --max-instances ≥ 1")
	}
	if cfg.Warm > cfg.MaxInstances {
		return server.Config{}, fmt.Errorf("--warm=%d exceeds --max-instances=%d: raise --max-instances or lower --warm", cfg.Warm, cfg.MaxInstances)
	}
	apiConfig := server.Config{
		GRPCAddr: cfg.GRPCAddr, HTTPAddr: cfg.HTTPAddr, Token: cfg.Token, Logger: log,
		Insecure: cfg.Insecure, TLSCert: cfg.TLSCert, TLSKey: cfg.TLSKey, UploadMemory: int64(cfg.UploadMemory),
	}
	if cfg.UploadMemory != 0 && cfg.UploadMemory < server.MaxRequestBytes { // 0: the default
		return server.Config{}, fmt.Errorf("--upload-memory=%dM is less than the largest request (%d MiB): give at least %dM", int64(cfg.UploadMemory)>>20, server.MaxRequestBytes>>20, server.MaxRequestBytes>>20)
	}
	if err := apiConfig.Check(); err != nil {
		return server.Config{}, err
	}
	return apiConfig, nil
}

// openProvider starts the daemon's provider (--provider), reached as
// --reach says.
func (d *daemon) openProvider(ctx context.Context, cfg serveConfig) error {
	var err error
	if d.provider, err = openProvider(ctx, cfg, d.log); err != nil {
		return err
	}
	reaching, err := reachProvider(d.provider, cfg.Reach, cfg.MaxInstances)
	if err != nil {
		return err // d.Close closes the provider
	}
	d.provider = reaching
	d.log.Info("provider ready", "provider", d.provider.Name(), "engine", d.provider.Engine().String())
	return nil
}

// serverSettings are the settings every server starts with: the buffer
// pool asked for, and connections for every database of a server at its
// connection cap, with room for testdbd's own connections beyond that.
func serverSettings(cfg serveConfig) (instance.Config, error) {
	settings := instance.DefaultConfig
	settings.BufferPoolBytes = int64(cfg.BufferPool)
	if cfg.MaxLeaseConns < cfg.LeaseConns {
		return instance.Config{}, fmt.Errorf("--max-lease-connections=%d is below --lease-connections=%d", cfg.MaxLeaseConns, cfg.LeaseConns)
	}
	settings.MaxConnections = cfg.MaxDBsPerInstance*cfg.MaxLeaseConns + lease.AdminHeadroom
	return settings, nil
}

// newFleet makes the fleet of p's servers, which reports their deaths to
// the lease manager once there is one.
func (d *daemon) newFleet(p testdbd.Provider, maxInstances int, settings instance.Config) *instance.Fleet {
	return instance.NewFleet(p, instance.FleetConfig{
		MaxInstances: maxInstances,
		Settings:     settings,
		Logger:       d.log,
		OnDeath: func(s *instance.Member, err error) {
			if m := d.deaths.Load(); m != nil {
				m.OnInstanceDeath(s, err)
			}
		},
	})
}

// openEngineImages starts the provider and fleet of every --engine-image,
// one engine each, none the default provider's.
func (d *daemon) openEngineImages(ctx context.Context, cfg serveConfig, settings instance.Config) error {
	seen := map[testdbd.Engine]string{d.provider.Engine(): "the default provider"}
	for i, image := range cfg.EngineImages {
		p, err := openEngineImage(ctx, cfg, image, i, d.log)
		if err != nil {
			return fmt.Errorf("--engine-image %s: %w", image, err)
		}
		d.extraProviders = append(d.extraProviders, p)
		if other, ok := seen[p.Engine()]; ok {
			return fmt.Errorf("--engine-image %s runs %s, as %s does: give each engine one image", image, p.Engine(), other)
		}
		seen[p.Engine()] = image
		d.extraFleets = append(d.extraFleets, d.newFleet(p, cfg.MaxInstances, settings))
		d.log.Info("engine ready", "image", image, "engine", p.Engine().String(), "provider", p.Name())
	}
	return nil
}

// startWarm starts n servers of the default fleet at once (--warm).
func (d *daemon) startWarm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	d.log.Info("starting warm servers", "count", n)
	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			_, err := d.fleet.Start(gctx)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("start warm servers: %w", err)
	}
	return nil
}

// leaseConfig is the lease manager's configuration: d's fleets and cfg's
// limits.
func leaseConfig(cfg *serveConfig, d *daemon, reg prometheus.Registerer, log *slog.Logger) lease.Config {
	return lease.Config{
		Fleet: d.fleet, Fleets: d.extraFleets, MaxDatabases: cfg.MaxDatabases, MaxDBsPerInstance: cfg.MaxDBsPerInstance,
		MemoryBudget: int64(cfg.MemoryBudget), PoolSize: cfg.PoolSize, IdleTrim: cfg.PoolIdle, StaleBuild: cfg.StaleBuild, Clones: cfg.Clones,
		DefaultTTL: cfg.DefaultTTL, MaxTTL: cfg.MaxTTL, DefaultWait: cfg.DefaultWait, MaxWait: cfg.MaxWait,
		LeaseConnections: cfg.LeaseConns, MaxLeaseConnections: cfg.MaxLeaseConns,
		BuildTimeout: cfg.BuildTimeout, MaxBuildTimeout: cfg.MaxBuildTimeout, MaxBuilds: cfg.MaxBuilds,
		MigrationsRoot: cfg.MigrationsRoot, LeaseSpace: int64(cfg.LeaseSpace), SpaceReserve: int64(cfg.SpaceReserve),
		CacheDir: cacheDir(cfg), CacheBytes: int64(cfg.CacheSize), LeaseRecord: filepath.Join(cfg.StateDir, "leases"),
		Registerer: reg, Logger: log,
	}
}

func openProvider(ctx context.Context, cfg serveConfig, log *slog.Logger) (testdbd.Provider, error) {
	ncfg := native.Config{
		StateDir: cfg.StateDir, Binary: cfg.Mysqld, DatadirRoot: cfg.DatadirRoot,
		AllowDisk: cfg.AllowDisk, TmpfsBytes: int64(cfg.TmpfsSize), Logger: log,
	}
	switch strings.ToLower(cfg.Provider) {
	case "native":
		return openNative(ctx, ncfg)
	case "auto":
		if _, err := native.FindBinary(cfg.Mysqld); err == nil {
			log.Info("--provider auto picked native: a server binary is installed")
			return openNative(ctx, ncfg)
		}
		log.Info("--provider auto picked docker: no mariadbd or mysqld is installed", "image", cfg.Image)
		p, err := openDocker(ctx, cfg, log)
		if err != nil {
			return nil, fmt.Errorf("--provider auto: no mariadbd or mysqld is installed (apt-get install mariadb-server-core, or --mysqld), and %w", err)
		}
		return p, nil
	case "docker":
		return openDocker(ctx, cfg, log)
	case "kubernetes":
		return openKubernetes(ctx, cfg, log)
	}
	return nil, fmt.Errorf("--provider %q: use auto, native, docker or kubernetes", cfg.Provider)
}

// openNative starts the native provider. A failed start returns a nil
// interface, not an interface holding a nil *native.Provider.
func openNative(ctx context.Context, cfg native.Config) (testdbd.Provider, error) {
	p, err := native.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// openDocker starts the Docker provider. Ryuk, testcontainers' reaper, runs
// from an image no registry here serves, so it is disabled unless the
// environment says otherwise; the provider removes its own containers.
func openDocker(ctx context.Context, cfg serveConfig, log *slog.Logger) (testdbd.Provider, error) {
	if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
		if err := os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true"); err != nil {
			return nil, err
		}
	}
	docker.SetLibraryLogger(log)
	p, err := docker.New(ctx, docker.Config{
		StateDir: cfg.StateDir, Image: cfg.Image, TmpfsBytes: int64(cfg.TmpfsSize), CA: cfg.serverCA, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// openEngineImage starts the provider of the i-th --engine-image: pods
// with --provider kubernetes, containers otherwise, each with a state
// directory of its own under --state-dir.
func openEngineImage(ctx context.Context, cfg serveConfig, image string, i int, log *slog.Logger) (testdbd.Provider, error) {
	cfg.Image = image
	ca, err := tlsca.Open(filepath.Join(cfg.StateDir, "tls"))
	if err != nil {
		return nil, err
	}
	cfg.serverCA = ca
	cfg.StateDir = filepath.Join(cfg.StateDir, "engines", strconv.Itoa(i+1))
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, err
	}
	if cfg.K8sOwner != "" {
		cfg.K8sOwner += "-" + strconv.Itoa(i+1)
	}
	if strings.ToLower(cfg.Provider) == "kubernetes" {
		return openKubernetes(ctx, cfg, log)
	}
	return openDocker(ctx, cfg, log)
}

// openKubernetes starts the Kubernetes provider. Each server pod's memory
// limit and request are the memory budget split evenly over the most
// servers that may run (--memory-budget / --max-instances): the pods then
// never hold more than the budget between them, and the scheduler places a
// pod only where its whole share fits (its data live in memory).
func openKubernetes(ctx context.Context, cfg serveConfig, log *slog.Logger) (testdbd.Provider, error) {
	kubernetes.SetLibraryLogger(log)
	var memory int64 // 0: the provider's default, --tmpfs-size plus 512M
	if cfg.MemoryBudget > 0 {
		memory = int64(cfg.MemoryBudget) / int64(cfg.MaxInstances)
	}
	p, err := kubernetes.New(ctx, kubernetes.Config{
		StateDir: cfg.StateDir, Kubeconfig: cfg.Kubeconfig, Namespace: cfg.Namespace, Image: cfg.Image,
		TmpfsBytes: int64(cfg.TmpfsSize), MemoryLimit: memory, MemoryRequest: memory,
		Service: cfg.K8sService, Owner: cfg.K8sOwner, CA: cfg.serverCA, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Close stops serving, then stops every server and removes their files.
// The manager's shutdown begins first: builds stop, nothing new starts,
// and calls waiting for a build or a database are answered Unavailable at
// once instead of holding the API's drain. Calls in flight and the
// manager's background work then get two thirds of the time to ctx's
// deadline, and stopping the servers the rest at least, so that a call or
// a build that runs to the deadline cannot leave a server, a tmpfs mount
// or a container behind.
func (d *daemon) Close(ctx context.Context) error {
	var errs []error
	if d.manager != nil {
		d.manager.Shutdown()
	}
	drain, cancel := drainContext(ctx)
	defer cancel()
	if d.server != nil {
		errs = append(errs, d.server.Close(drain))
	}
	if d.manager != nil {
		errs = append(errs, d.manager.Close(drain))
	}
	if d.fleet != nil {
		errs = append(errs, d.fleet.Close(ctx))
	}
	for _, f := range d.extraFleets {
		errs = append(errs, f.Close(ctx))
	}
	if d.provider != nil {
		errs = append(errs, d.provider.Close(ctx))
	}
	for _, p := range d.extraProviders {
		errs = append(errs, p.Close(ctx))
	}
	return errors.Join(errs...)
}

// drainContext is ctx with two thirds of the time to its deadline: what
// a shutdown gives calls in flight, keeping the rest for stopping servers.
func drainContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)*2/3))
}
