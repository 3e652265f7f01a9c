package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/random"
)

// DefaultImage is the image `make image` builds from the host's MariaDB
// packages (scripts/build-image.sh).
const DefaultImage = "testdbd/mariadb:10.11-local"

// DefaultTmpfsBytes is the size limit of each container's tmpfs datadir.
const DefaultTmpfsBytes = 2 << 30

// The labels every container of testdbd carries.
const (
	// LabelOwner identifies the daemon: a hash of the host name and the
	// state directory. The start-up sweep removes containers with its own
	// value only.
	LabelOwner = "io.testdbd.owner"
	// LabelInstance is the instance id.
	LabelInstance = "io.testdbd.instance"
	// LabelStateDir is the daemon's state directory, for people reading
	// `docker ps`.
	LabelStateDir = "io.testdbd.state-dir"
)

// reaperNetwork is the bridge network testcontainers creates when the
// engine has no default bridge network.
const reaperNetwork = "reaper_default"

// Config configures a Provider.
type Config struct {
	// StateDir identifies this daemon's containers (LabelOwner is derived
	// from it) and holds the lock that keeps a second daemon off it.
	// Required.
	StateDir string
	// Image is the server image, which must be present locally (nothing is
	// pulled). Empty means DefaultImage.
	Image string
	// TmpfsBytes is the size limit of each container's tmpfs datadir and
	// tmpdir; 0 means DefaultTmpfsBytes.
	TmpfsBytes int64
	// NoSeed makes containers initialize their datadir with the image's own
	// tools (mariadb-install-db or mysqld --initialize-insecure) even when
	// the image carries a pristine datadir. The official images always take
	// that path; tests set NoSeed to exercise it on the local image.
	NoSeed bool
	// CA signs each server's TLS certificate; nil means the authority kept
	// in StateDir/tls (created when missing).
	CA *tlsca.Authority
	// Logger receives progress; nil means slog.Default().
	Logger *slog.Logger
}

// Provider starts servers as containers. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	log      *slog.Logger
	tclog    tclog.Logger                 // testcontainers' per-container messages, at debug level
	owner    string                       // LabelOwner value
	cli      *testcontainers.DockerClient // inspect, wait, stats, list, remove
	engine   testdbd.Engine
	lock     *os.File // flock on StateDir/lock
	ca       *tlsca.Authority
	ownsNet  bool // reaper_default did not exist before this provider
	watchCtx context.Context
	cancel   context.CancelFunc // ends every watcher
	wg       sync.WaitGroup     // the watchers
	// starting counts the starts in flight; Close cancels them
	// (startCancel) and waits for them before its last sweep, or a
	// container created after that sweep would outlive the provider.
	starting    sync.WaitGroup
	startCtx    context.Context
	startCancel context.CancelFunc

	mu      sync.Mutex
	servers map[string]*Container
	closed  bool
}

var _ testdbd.Provider = (*Provider)(nil)

// New connects to the Docker engine, checks that the image is present and
// Ryuk is disabled, takes the state directory (refusing one another daemon
// holds), removes the containers a killed daemon of the same state directory
// left behind, and detects the image's engine by running `mariadbd
// --version` (or mysqld) in a throwaway container.
func New(ctx context.Context, cfg Config) (_ *Provider, err error) {
	if cfg.StateDir == "" {
		return nil, testdbd.Errorf(testdbd.EInvalid, "docker provider: a state directory is required")
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.TmpfsBytes == 0 {
		cfg.TmpfsBytes = DefaultTmpfsBytes
	}
	tc := testcontainers.ReadConfig().Config
	if !tc.RyukDisabled {
		return nil, testdbd.Errorf(testdbd.EInvalid,
			"docker provider: Ryuk (the testcontainers reaper) is enabled, but its image cannot be pulled without a registry: "+
				"set TESTCONTAINERS_RYUK_DISABLED=true (exactly 'true') before starting; testdbd removes its own containers")
	}
	if tc.HubImageNamePrefix != "" {
		return nil, testdbd.Errorf(testdbd.EInvalid,
			"docker provider: TESTCONTAINERS_HUB_IMAGE_NAME_PREFIX (or hub.image.name.prefix) is set to %q and would rewrite the image name: unset it",
			tc.HubImageNamePrefix)
	}
	p := &Provider{cfg: cfg, log: cfg.Logger, servers: map[string]*Container{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.tclog = libraryLogger{p.log}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	p.cfg.StateDir = abs
	p.owner = ownerID(abs)
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if p.lock, err = instance.LockStateDir(abs); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = p.lock.Close()
			if p.cli != nil {
				_ = p.cli.Close()
			}
		}
	}()
	if p.ca = cfg.CA; p.ca == nil {
		if p.ca, err = tlsca.Open(filepath.Join(abs, "tls")); err != nil {
			return nil, err
		}
	}
	if p.cli, err = testcontainers.NewDockerClientWithOpts(ctx); err != nil {
		return nil, testdbd.Errorf(testdbd.EUnavailable,
			"docker provider: no Docker engine reachable (%v): start Docker or set DOCKER_HOST, or use --provider native", err)
	}
	if _, err := p.cli.ImageInspect(ctx, cfg.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, testdbd.Errorf(testdbd.EUnavailable,
				"docker provider: image %s is not present locally and testdbd never pulls: build the local images with `make images` "+
					"(testdbd/mariadb:10.11-local alone: `make image`), "+
					"or pass --image with an image you have (docker images; e.g. mariadb:10.11 or mysql:8.4 after a docker pull)", cfg.Image)
		}
		return nil, fmt.Errorf("docker provider: inspect image %s: %w", cfg.Image, err)
	}
	p.ownsNet = !p.networkExists(ctx, reaperNetwork)
	if err := p.sweep(ctx, "removed a container left by a previous daemon"); err != nil {
		return nil, err
	}
	if p.engine, err = p.detectEngine(ctx); err != nil {
		return nil, err
	}
	p.watchCtx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.startCtx, p.startCancel = context.WithCancel(context.WithoutCancel(ctx))
	p.log.Info("docker provider ready", "image", cfg.Image, "engine", p.engine.String(), "owner", p.owner)
	return p, nil
}

// Name returns "docker".
func (p *Provider) Name() string { return "docker" }

// Engine returns the flavor and version of the image's server.
func (p *Provider) Engine() testdbd.Engine { return p.engine }

// Image returns the image the provider runs.
func (p *Provider) Image() string { return p.cfg.Image }

// Owner returns the value of LabelOwner on this provider's containers.
func (p *Provider) Owner() string { return p.owner }

// Close stops and removes every container the provider started (and any
// other container with its owner label), removes the testcontainers
// fallback network if the provider caused its creation, and releases the
// state directory.
func (p *Provider) Close(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if p.closed && p.lock == nil {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	servers := make([]*Container, 0, len(p.servers))
	for _, s := range p.servers {
		servers = append(servers, s)
	}
	lock := p.lock
	p.lock = nil
	p.mu.Unlock()

	if p.startCancel != nil {
		p.startCancel()
	}
	p.starting.Wait()
	errs := instance.StopAll(ctx, servers)
	// Containers of starts still in flight, or whose removal failed above.
	errs = append(errs, p.sweep(ctx, "removed a container left at shutdown"))
	if p.ownsNet {
		p.removeNetwork(ctx, reaperNetwork)
	}
	p.cancel()
	p.wg.Wait()
	errs = append(errs, p.cli.Close())
	if lock != nil {
		errs = append(errs, lock.Close())
	}
	return errors.Join(errs...)
}

// SetLibraryLogger sends testcontainers-go's own messages (its banner on
// first connecting to Docker, container life-cycle lines) to l at debug
// level instead of stderr. It changes a process-wide setting of that
// library: call it once, from main.
func SetLibraryLogger(l *slog.Logger) {
	tclog.SetDefault(libraryLogger{l})
}

// libraryLogger adapts slog to testcontainers' Printf logger.
type libraryLogger struct{ l *slog.Logger }

func (l libraryLogger) Printf(format string, v ...any) {
	l.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "testcontainers")
}

// ownerID is the LabelOwner value of a state directory on this host.
func ownerID(stateDir string) string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + stateDir))
	return hex.EncodeToString(sum[:8])
}

// labels returns the labels of a container of this provider.
func (p *Provider) labels(instance string) map[string]string {
	return map[string]string{LabelOwner: p.owner, LabelInstance: instance, LabelStateDir: p.cfg.StateDir}
}

// sweep removes every container labelled with this provider's owner: at
// start those a killed daemon left, at Close whatever remains. Containers of
// other state directories carry another owner and are never touched.
func (p *Provider) sweep(ctx context.Context, msg string) error {
	return removeOwned(ctx, p.cli, p.owner, p.log, msg)
}

// removeWait bounds how long a removal waits for a container the engine
// is still creating.
const removeWait = 30 * time.Second

// removeOwned removes every container whose LabelOwner is owner.
func removeOwned(ctx context.Context, cli *testcontainers.DockerClient, owner string, log *slog.Logger, msg string) error {
	return removeLabelled(ctx, cli, log, msg, LabelOwner+"="+owner)
}

// removeLabelled removes every container that carries all of labels
// ("key=value"). A container the engine lists but is still creating (its
// create request cancelled mid-way) answers a removal with "no such
// container" and stays: it is tried again until it is gone, for up to
// removeWait.
func removeLabelled(ctx context.Context, cli *testcontainers.DockerClient, log *slog.Logger, msg string, labels ...string) error {
	filters := make(client.Filters)
	for _, l := range labels {
		filters = filters.Add("label", l)
	}
	deadline := time.Now().Add(removeWait)
	for {
		list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
		if err != nil {
			return fmt.Errorf("docker provider: list containers: %w", err)
		}
		var errs, pending []error
		for _, c := range list.Items {
			_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			switch {
			case cerrdefs.IsNotFound(err):
				pending = append(pending, fmt.Errorf("container %s (%s) is listed but cannot be removed yet", shortID(c.ID), c.State))
			case err != nil:
				errs = append(errs, fmt.Errorf("remove container %s: %w", shortID(c.ID), err))
			default:
				log.Info(msg, "container", shortID(c.ID), "instance", c.Labels[LabelInstance], "state", c.State)
			}
		}
		if len(pending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return errors.Join(append(errs, pending...)...)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SweepStateDir removes the containers a Docker provider that ended
// without closing (its process killed, or ended by a test's timeout, which
// runs no cleanup) left for the state directory stateDir. A provider
// starting on stateDir does the same; this is for a state directory nobody
// will start on again. It takes the state directory's lock first, so a
// live provider's containers are refused (testdbd.EConflict) and left
// alone.
func SweepStateDir(ctx context.Context, stateDir string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	return instance.WithStateDirLock(stateDir, func(abs string) error {
		cli, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			return fmt.Errorf("docker provider: no Docker engine reachable: %w", err)
		}
		defer func() { _ = cli.Close() }()
		return removeOwned(ctx, cli, ownerID(abs), log, "removed a container left by a provider that did not close")
	})
}

func (p *Provider) networkExists(ctx context.Context, name string) bool {
	list, err := p.cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("name", name)})
	if err != nil {
		return true // unknown: never remove it
	}
	for _, n := range list.Items {
		if n.Name == name {
			return true
		}
	}
	return false
}

// removeNetwork removes a network testcontainers created for this provider;
// the engine refuses while another container uses it, which is fine.
func (p *Provider) removeNetwork(ctx context.Context, name string) {
	if !p.networkExists(ctx, name) {
		return
	}
	if _, err := p.cli.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err == nil {
		p.log.Info("removed the testcontainers fallback network", "network", name)
	}
}

// detectEngine runs the server's --version in a throwaway container with no
// network and parses the flavor and version.
func (p *Provider) detectEngine(ctx context.Context) (testdbd.Engine, error) {
	ctr, err := testcontainers.Run(ctx, p.cfg.Image,
		testcontainers.WithLogger(p.tclog),
		testcontainers.WithName("testdbd-"+p.owner+"-version-"+random.Hex(3)),
		testcontainers.WithEntrypoint("/bin/sh", "-c", serverimage.VersionScript, "testdbd-version"),
		testcontainers.WithLabels(p.labels("version")),
		networkMode("none"),
		testcontainers.WithWaitStrategy(wait.ForExit().WithExitTimeout(time.Minute).WithPollInterval(50*time.Millisecond)),
	)
	defer func() { _ = p.terminate(ctr) }()
	if err != nil {
		return testdbd.Engine{}, fmt.Errorf("docker provider: run %s --version in image %s: %w", "mariadbd/mysqld", p.cfg.Image, err)
	}
	out := p.logs(ctx, ctr.GetContainerID(), "all")
	state, err := ctr.State(ctx)
	if err != nil {
		return testdbd.Engine{}, fmt.Errorf("docker provider: inspect version container: %w", err)
	}
	if state.ExitCode != 0 {
		return testdbd.Engine{}, testdbd.Errorf(testdbd.EInvalid,
			"docker provider: image %s cannot run mariadbd or mysqld --version (exit status %d, needs /bin/sh): %s",
			p.cfg.Image, state.ExitCode, lastLines(out, 3))
	}
	line := out
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " Ver ") {
			line = l
			break
		}
	}
	e, err := testdbd.ParseEngine(line)
	if err != nil {
		return testdbd.Engine{}, fmt.Errorf("docker provider: detect the engine of image %s: %w", p.cfg.Image, err)
	}
	return e, nil
}

// terminate kills and removes a container testcontainers returned, if any;
// a container already gone is not an error.
func (p *Provider) terminate(ctr *testcontainers.DockerContainer) error {
	if ctr == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := ctr.Terminate(ctx, testcontainers.StopTimeout(0))
	if err != nil && !cerrdefs.IsNotFound(err) {
		// Terminate reports a stop that found nothing to stop as an error
		// too; what matters is that the container is gone.
		if _, ierr := p.cli.ContainerInspect(ctx, ctr.GetContainerID(), client.ContainerInspectOptions{}); cerrdefs.IsNotFound(ierr) {
			return nil
		}
		return fmt.Errorf("remove container %s: %w", shortID(ctr.GetContainerID()), err)
	}
	return nil
}

// logs returns a container's output: the last tail lines, or "all"; at
// most its last instance.MaxCrashLogBytes.
func (p *Provider) logs(ctx context.Context, id, tail string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rc, err := p.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return fmt.Sprintf("(no logs: %v)", err)
	}
	defer rc.Close()
	buf := &tailBuffer{max: instance.MaxCrashLogBytes}
	if _, err := stdcopy.StdCopy(buf, buf, rc); err != nil && buf.b.Len() == 0 {
		return fmt.Sprintf("(no logs: %v)", err)
	}
	return strings.TrimSpace(buf.String())
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   bytes.Buffer
	max int
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n, _ := t.b.Write(p)
	if t.b.Len() > 2*t.max {
		t.b.Next(t.b.Len() - t.max)
		t.cut = true
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	b := t.b.Bytes()
	if len(b) > t.max {
		b, t.cut = b[len(b)-t.max:], true
	}
	if t.cut {
		return "(beginning cut)\n" + string(b)
	}
	return string(b)
}

// networkMode puts a container in the given network mode (host or none)
// and drops the endpoint testcontainers would otherwise attach: with no
// default bridge it attaches every container to its reaper_default network,
// which host mode cannot join.
func networkMode(mode string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode(mode)
		}).Customize(req); err != nil {
			return err
		}
		return testcontainers.WithEndpointSettingsModifier(func(m map[string]*network.EndpointSettings) {
			for k := range m {
				delete(m, k)
			}
		}).Customize(req)
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// lastLines returns the last n lines of s joined with " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func (p *Provider) forget(id string) {
	p.mu.Lock()
	delete(p.servers, id)
	p.mu.Unlock()
}
