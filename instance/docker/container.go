package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	mount "github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/random"
)

// Datadir is the server's datadir inside its container, a tmpfs mount.
const Datadir = serverimage.Datadir

// ServerUser is the user servers run as in their container.
const ServerUser = serverimage.ServerUser

// startupTimeout bounds one container's start.
const startupTimeout = 2 * time.Minute

// Container is one server container. It is safe for concurrent use.
type Container struct {
	p           *Provider
	id          string
	ctr         *testcontainers.DockerContainer
	containerID string
	port        int
	password    string
	onTmpfs     bool // the datadir is a tmpfs mount, as the container's inspect data says
	pid         int  // the server's process id on the engine's host
	started     time.Time
	startup     time.Duration
	tls         atomic.Pointer[tlsca.Server] // its TLS certificate

	cancelWatch context.CancelFunc
	life        *instance.Lifecycle
}

var _ testdbd.Instance = (*Container)(nil)

// Start runs a server container on a free loopback port of the host's
// network with its datadir on tmpfs, and waits until testdbd's admin
// account can log in over TCP.
func (p *Provider) Start(ctx context.Context, opts testdbd.StartOptions) (testdbd.Instance, error) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.starting.Add(1)
	}
	p.mu.Unlock()
	if closed {
		return nil, testdbd.Errorf(testdbd.EUnavailable, "docker provider is closed")
	}
	defer p.starting.Done()
	// Close cancels a start in flight as well as the caller can.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(p.startCtx, stop)()
	id := "d-" + random.Hex(4)
	var s *Container
	var err error
	// A port picked free can be taken before the server binds it; try again
	// with another one.
	for attempt := 0; ; attempt++ {
		s, err = p.launch(ctx, id, opts)
		if err == nil || attempt == 2 || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("start %s container: %w", p.engine.Flavor, err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = s.Stop(context.WithoutCancel(ctx))
		return nil, testdbd.Errorf(testdbd.EUnavailable, "docker provider closed while the server was starting")
	}
	p.servers[id] = s
	p.mu.Unlock()
	p.log.Info("server started", "instance", id, "engine", p.engine.String(), "image", p.cfg.Image,
		"container", shortID(s.containerID), "port", s.port, "startup", s.startup.Round(time.Millisecond))
	return s, nil
}

// launch runs one container and waits until it answers. On failure nothing
// of it remains.
func (p *Provider) launch(ctx context.Context, id string, opts testdbd.StartOptions) (_ *Container, err error) {
	port, err := instance.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Container{p: p, id: id, port: port, password: random.Hex(16), life: instance.NewLifecycle()}
	host, _ := s.ClientAddr()
	srv, err := p.ca.Issue(append([]string{host}, opts.TLSHosts...)...)
	if err != nil {
		return nil, err
	}
	s.tls.Store(srv)
	env := serverimage.TLSEnv(srv.CertPEM, srv.KeyPEM, srv.CAPEM)
	env["TESTDBD_INIT_SQL"] = serverimage.InitSQL(p.engine.Flavor, s.password)
	args := serverimage.Args(p.engine, port, "127.0.0.1", opts.Args)
	tmpfs := fmt.Sprintf("rw,nosuid,nodev,size=%d", p.cfg.TmpfsBytes)
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	s.started = time.Now()
	// The create and start run to their end even when ctx ends: a create
	// cancelled mid-way can still be carried out by the engine after any
	// removal looked for it, and the container would be left behind. The
	// caller's end is honoured right after, by removing the container.
	runCtx, runCancel := context.WithTimeout(context.WithoutCancel(ctx), startupTimeout)
	s.ctr, err = testcontainers.Run(runCtx, p.cfg.Image,
		testcontainers.WithLogger(p.tclog),
		testcontainers.WithName("testdbd-"+p.owner+"-"+id),
		testcontainers.WithEntrypoint("/bin/sh", "-c", serverimage.StartScript(p.engine, !p.cfg.NoSeed), "testdbd-start"),
		testcontainers.WithCmd(args...),
		testcontainers.WithEnv(env),
		testcontainers.WithTmpfs(map[string]string{Datadir: tmpfs + ",mode=0700", serverimage.TmpDir: tmpfs}),
		testcontainers.WithLabels(p.labels(id)),
		// The start script needs root whatever user the image names.
		testcontainers.WithConfigModifier(func(c *container.Config) { c.User = "0:0" }),
		networkMode("host"),
	)
	runCancel()
	if s.ctr != nil {
		s.containerID = s.ctr.GetContainerID()
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		p.discard(ctx, s.ctr, id)
		return nil, fmt.Errorf("run image %s: %w", p.cfg.Image, err)
	}
	if err := p.watch(s); err != nil {
		p.discard(ctx, s.ctr, id)
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.Stop(context.WithoutCancel(ctx))
		}
	}()
	ins, err := p.cli.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect container: %w", err)
	}
	if ins.Container.State != nil {
		s.pid = ins.Container.State.Pid
	}
	if s.onTmpfs = tmpfsAt(ins.Container, Datadir); !s.onTmpfs {
		return nil, testdbd.Errorf(testdbd.EInternal, "container %s: its datadir %s is not a tmpfs mount", shortID(s.containerID), Datadir)
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	s.startup = time.Since(s.started)
	return s, nil
}

// discard removes what a failed launch of instance id left: the container
// testcontainers returned, if any, and any other container of the
// instance. A create the engine carried out after ctx ended leaves a
// container testcontainers returned no handle of, or one that answers a
// removal with "no such container" while the engine still creates it.
func (p *Provider) discard(ctx context.Context, ctr *testcontainers.DockerContainer, id string) {
	_ = p.terminate(ctr)
	_ = removeLabelled(context.WithoutCancel(ctx), p.cli, p.log, "removed a container whose start failed",
		LabelOwner+"="+p.owner, LabelInstance+"="+id)
}

// waitReady pings the server over TCP as the admin account until it
// answers, the container stops or ctx ends.
func (s *Container) waitReady(ctx context.Context) error {
	return instance.WaitReady(ctx, s.Admin(), s.life, func() string {
		return instance.Explain(s.p.logs(ctx, s.containerID, "200"))
	})
}

// watch starts the goroutine that closes s.done when the container stops
// running. It fails when the provider is closed.
func (p *Provider) watch(s *Container) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return testdbd.Errorf(testdbd.EUnavailable, "docker provider closed while the server was starting")
	}
	ctx, cancel := context.WithCancel(p.watchCtx)
	s.cancelWatch = cancel
	p.wg.Add(1)
	go s.watch(ctx)
	return nil
}

// ID returns the instance id.
func (s *Container) ID() string { return s.id }

// Engine returns the server's flavor and version.
func (s *Container) Engine() testdbd.Engine { return s.p.engine }

// Admin returns the TCP endpoint of testdbd's admin account.
func (s *Container) Admin() testdbd.Endpoint {
	return testdbd.Endpoint{Host: "127.0.0.1", Port: s.port, User: serverimage.AdminUser, Password: s.password}
}

// ClientAddr returns the loopback TCP address handed to leases.
func (s *Container) ClientAddr() (string, int) { return "127.0.0.1", s.port }

// TLSCA returns the certificate of the authority that signed the server's.
func (s *Container) TLSCA() []byte { return s.tls.Load().CAPEM }

// TLSNotAfter returns when the server's certificate expires.
func (s *Container) TLSNotAfter() time.Time { return s.tls.Load().NotAfter }

// RenewTLS issues a certificate for the same hosts and has a shell in the
// container, as the server's user, write it and its key over the
// server's (serverimage.RenewTLSScript); FLUSH SSL (ALTER INSTANCE RELOAD
// TLS) makes the server use them.
func (s *Container) RenewTLS(ctx context.Context) error {
	srv, err := s.p.ca.Issue(s.tls.Load().Hosts...)
	if err != nil {
		return err
	}
	var env []string
	for k, v := range serverimage.TLSEnv(srv.CertPEM, srv.KeyPEM, srv.CAPEM) {
		env = append(env, k+"="+v)
	}
	code, out, err := s.ctr.Exec(ctx, []string{"/bin/sh", "-c", serverimage.RenewTLSScript},
		tcexec.WithUser(ServerUser), tcexec.WithEnv(env), tcexec.Multiplexed())
	if err == nil && code != 0 {
		b, _ := io.ReadAll(io.LimitReader(out, 4096))
		err = fmt.Errorf("exit status %d: %s", code, strings.TrimSpace(string(b)))
	}
	if err != nil {
		return fmt.Errorf("write the renewed TLS certificate into container %s: %w", shortID(s.containerID), err)
	}
	s.tls.Store(srv)
	return nil
}

// LocalDatadir returns the container's datadir as seen through the server
// process's root (/proc/<pid>/root/var/lib/mysql) when the daemon runs as
// root on the engine's host and can see it there; "" otherwise.
func (s *Container) LocalDatadir() string {
	if os.Geteuid() != 0 || s.pid <= 0 {
		return ""
	}
	dir := fmt.Sprintf("/proc/%d/root%s", s.pid, Datadir)
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// ContainerID returns the container's id.
func (s *Container) ContainerID() string { return s.containerID }

// Done is closed when the container has stopped running.
func (s *Container) Done() <-chan struct{} { return s.life.Done() }

// Err says why the container stopped unexpectedly; nil after Stop.
func (s *Container) Err() error { return s.life.Err() }

// Info describes the server, inspecting the container (state, pid, tmpfs
// datadir) and reading its memory use from the engine's stats now.
func (s *Container) Info(ctx context.Context) testdbd.InstanceInfo {
	info := testdbd.InstanceInfo{
		ID: s.id, Provider: "docker", Engine: s.p.engine,
		Host: "127.0.0.1", Port: s.port,
		Datadir: Datadir, DatadirOnTmpfs: s.onTmpfs,
		Image: s.p.cfg.Image, ContainerID: s.containerID,
		State:     testdbd.InstanceRunning,
		StartedAt: s.started, StartupTime: s.startup,
	}
	if info.State, info.Err = s.life.State(); info.State != testdbd.InstanceRunning {
		return info
	}
	if ins, err := s.p.cli.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{}); err == nil {
		info.DatadirOnTmpfs = tmpfsAt(ins.Container, Datadir)
		if st := ins.Container.State; st != nil {
			info.PID = st.Pid
			if !st.Running {
				info.State = testdbd.InstanceStopped
			}
		}
	}
	// The datadir's use, seen through /proc when the daemon shares the
	// engine's host and may look there (as root); 0 otherwise.
	if used, onTmpfs, ok := instance.ContainerDatadir(info.PID, Datadir); ok && onTmpfs {
		info.DatadirBytes = used
	}
	info.MemoryBytes = s.memory(ctx)
	info.FootprintBytes = info.MemoryBytes // the container's memory counts its tmpfs pages
	return info
}

// Stop kills and removes the container (its data is disposable). It is safe
// to call more than once.
func (s *Container) Stop(ctx context.Context) error {
	return s.life.Stop(func() error {
		err := s.p.terminate(s.ctr)
		s.cancelWatch()
		select {
		case <-s.life.Done():
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("stop instance %s: %w", s.id, ctx.Err())
			}
		}
		s.p.forget(s.id)
		s.p.log.Info("server stopped", "instance", s.id, "container", shortID(s.containerID))
		return err
	})
}

// memory returns the container's memory use as `docker stats` shows it:
// usage less inactive page cache. tmpfs pages (the datadir) count, as they
// are memory the container holds.
func (s *Container) memory(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := s.p.cli.ContainerStats(ctx, s.containerID, client.ContainerStatsOptions{})
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return 0
	}
	m := st.MemoryStats
	usage := m.Usage
	for _, k := range []string{"total_inactive_file", "inactive_file"} { // cgroup v1, v2
		if v, ok := m.Stats[k]; ok && v < usage {
			usage -= v
			break
		}
	}
	return int64(usage)
}

// watch waits for the container to stop running and records it in its
// lifecycle with why: how it ended and its log lines about that. If the
// engine cannot be asked (it restarts, say), it polls. A watch canceled
// by Stop records the exit too.
func (s *Container) watch(ctx context.Context) {
	defer s.p.wg.Done()
	defer s.life.Exited(func() error { return nil })
	for {
		res := s.p.cli.ContainerWait(ctx, s.containerID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case r := <-res.Result:
			e := s.exitOf(ctx, int(r.StatusCode))
			if r.Error != nil && r.Error.Message != "" {
				s.p.log.Warn("waiting for the container", "container", shortID(s.containerID), "err", r.Error.Message)
			}
			s.exited(ctx, &e)
			return
		case err := <-res.Error:
			if ctx.Err() != nil {
				return
			}
			if cerrdefs.IsNotFound(err) {
				s.exited(ctx, nil)
				return
			}
		}
		// The wait itself failed: look again in a moment.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		ins, err := s.p.cli.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
			s.exited(ctx, nil)
			return
		case err == nil && ins.Container.State != nil && !ins.Container.State.Running:
			e := instance.ContainerExit(ins.Container.State.ExitCode, ins.Container.State.OOMKilled)
			s.exited(ctx, &e)
			return
		}
	}
}

// exitOf says how the container ended: its exit status and, when it can
// be inspected, whether the kernel's out-of-memory killer ended it.
func (s *Container) exitOf(ctx context.Context, status int) instance.Exit {
	oom := false
	if ins, err := s.p.cli.ContainerInspect(ctx, s.containerID, client.ContainerInspectOptions{}); err == nil && ins.Container.State != nil {
		oom = ins.Container.State.OOMKilled
	}
	return instance.ContainerExit(status, oom)
}

// exited records that the container stopped (how it ended; nil: it was
// removed) and, unless it was stopped on purpose, why: how, and what its
// log says about that (instance.DeathCause). The log (the server's error
// log: its output) is kept under the state directory before the
// container is removed.
func (s *Container) exited(ctx context.Context, exit *instance.Exit) {
	s.life.Exited(func() error {
		log := s.p.logs(ctx, s.containerID, "all")
		kept := "its log was not kept"
		if path, err := instance.KeepCrashLog(s.p.cfg.StateDir, s.id, []byte(log)); err == nil {
			kept = "its log kept at " + path
		} else {
			kept += ": " + err.Error()
		}
		how := "was removed"
		if said := instance.DeathLines(log); said != "" {
			how += "; its log says: " + said
		}
		if exit != nil {
			how = instance.DeathCause(*exit, log)
		}
		return fmt.Errorf("server container %s ended unexpectedly: it %s; %s", shortID(s.containerID), how, kept)
	})
}

// tmpfsAt reports whether the inspect data shows a tmpfs mount at path.
func tmpfsAt(c container.InspectResponse, path string) bool {
	if hc := c.HostConfig; hc != nil {
		if _, ok := hc.Tmpfs[path]; ok {
			return true
		}
		for _, m := range hc.Mounts {
			if m.Type == mount.TypeTmpfs && m.Target == path {
				return true
			}
		}
	}
	for _, m := range c.Mounts {
		if m.Type == mount.TypeTmpfs && m.Destination == path {
			return true
		}
	}
	return false
}
