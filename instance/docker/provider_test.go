package docker_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/go-sql-driver/mysql"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/internal/testenv"
)

// cells are the Docker cells of the engine matrix under test (see
// testenv.Providers: TESTDBD_ENGINES selects, TESTDBD_TEST_IMAGE replaces).
var cells []testenv.Provider

// engine is the Docker engine, or nil with noEngine saying why.
var (
	engine   *testcontainers.DockerClient
	noEngine string
)

func TestMain(m *testing.M) {
	// The reaper's image cannot be pulled here; testdbd cleans up itself.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	cells = testenv.Kind("docker")
	docker.SetLibraryLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var err error
	engine, err = testcontainers.NewDockerClientWithOpts(ctx)
	cancel()
	if err != nil {
		engine, noEngine = nil, fmt.Sprintf("no Docker engine reachable: %v", err)
	}
	var nets []string
	if engine != nil {
		nets = networks()
	}
	code := m.Run()
	if engine != nil {
		if left := testContainers(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the tests left containers behind: %v\n", left)
			code = 1
		}
		// Only a network that was not there before is this package's doing:
		// other packages' tests run at the same time and may remove theirs.
		var left []string
		for _, n := range networks() {
			if !slices.Contains(nets, n) {
				left = append(left, n)
			}
		}
		if len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the tests left networks behind: %v (before them: %v)\n", left, nets)
			code = 1
		}
		engine.Close()
	}
	os.Exit(code)
}

// networks lists the engine's network names, but those of Compose
// projects: this package runs none, other packages' tests do, at the same
// time.
func networks() []string {
	list, err := engine.NetworkList(context.Background(), client.NetworkListOptions{})
	if err != nil {
		panic(err)
	}
	var names []string
	for _, n := range list.Items {
		if _, compose := n.Labels["com.docker.compose.project"]; !compose {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	return names
}

// testContainers lists containers of testdbd whose state directory is a
// temporary one (the tests'), and removes them.
func testContainers() []string {
	ctx := context.Background()
	list, err := engine.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelOwner)})
	if err != nil {
		panic(err)
	}
	var left []string
	for _, c := range list.Items {
		if _, ours := stateDirs.Load(c.Labels[docker.LabelStateDir]); ours {
			left = append(left, strings.Join(c.Names, ","))
			_, _ = engine.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	return left
}

// eachImage runs test once per Docker cell, as a subtest named after it.
func eachImage(t *testing.T, test func(t *testing.T, image string)) {
	t.Helper()
	if len(cells) == 0 {
		t.Skip("TESTDBD_ENGINES selects no Docker cell")
	}
	for _, c := range cells {
		t.Run(c.Name, func(t *testing.T) {
			if c.Kind != "docker" {
				c.New(t) // an unknown cell: fails, naming the cells that exist
			}
			testenv.NeedImage(t, c.Image) // skips, naming the make target that builds it
			test(t, c.Image)
		})
	}
}

// needEngine skips the test in the quick tier and when no Docker engine is
// reachable.
func needEngine(t *testing.T) {
	t.Helper()
	testenv.NeedFull(t, "the Docker provider")
	if engine == nil {
		t.Skip(noEngine)
	}
}

// stateDirs are the state directories this package's tests created: only
// their containers are this package's to check (other packages' tests may
// run containers at the same time).
var stateDirs sync.Map

// config returns a provider configuration of image with a fresh state
// directory.
func config(t *testing.T, image string) docker.Config {
	dir := testenv.StateDir(t)
	stateDirs.Store(dir, true)
	return docker.Config{StateDir: dir, Image: image, TmpfsBytes: 512 << 20, Logger: testenv.Logger(t)}
}

// newProvider starts a provider and, at the end of the test, closes it and
// checks that none of its containers remain.
func newProvider(t *testing.T, cfg docker.Config) *docker.Provider {
	t.Helper()
	needEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatalf("docker provider: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close provider: %v", err)
		}
		if left := containers(t, p.Owner()); len(left) > 0 {
			t.Errorf("containers left after Close: %v", left)
		}
	})
	return p
}

// containers lists the ids of the containers labelled with owner.
func containers(t *testing.T, owner string) []string {
	t.Helper()
	list, err := engine.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelOwner+"="+owner)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func start(t *testing.T, p *docker.Provider) testdbd.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := p.Start(ctx, testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{})})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	return inst
}

func connect(t *testing.T, host string, port int, user, password, dbname string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	cfg.User, cfg.Passwd, cfg.DBName = user, password, dbname
	cfg.Timeout = 5 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db
}

func admin(t *testing.T, inst testdbd.Instance) *sql.DB {
	t.Helper()
	db, err := instance.OpenAdmin(inst.Admin(), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStartStop(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		p := newProvider(t, config(t, image))
		if f := p.Engine().Flavor; f != testdbd.MariaDB && f != testdbd.MySQL {
			t.Fatalf("engine flavor %q", f)
		}
		if p.Name() != "docker" {
			t.Errorf("Name() = %q", p.Name())
		}
		inst := start(t, p)
		info := inst.Info(context.Background())
		if info.Provider != "docker" || info.Image != image || info.ContainerID == "" || info.Datadir != docker.Datadir {
			t.Errorf("info: %+v", info)
		}
		if !info.DatadirOnTmpfs {
			t.Errorf("datadir %s is not reported on tmpfs", info.Datadir)
		}
		if info.Port == 0 || info.PID == 0 || info.MemoryBytes == 0 || info.StartupTime == 0 || info.State != testdbd.InstanceRunning {
			t.Errorf("incomplete info: %+v", info)
		}
		t.Logf("started in %v, memory %d MB, datadir %d MB", info.StartupTime, info.MemoryBytes>>20, info.DatadirBytes>>20)
		if os.Geteuid() == 0 && info.DatadirBytes == 0 {
			t.Errorf("datadir usage not read (as root, through /proc/%d/root)", info.PID)
		}

		// The container's own inspect data shows the tmpfs datadir and the
		// host network, and the server runs with that datadir.
		ins, err := engine.ContainerInspect(context.Background(), info.ContainerID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if opts, ok := ins.Container.HostConfig.Tmpfs[docker.Datadir]; !ok || !strings.Contains(opts, "size=") {
			t.Errorf("container tmpfs mounts: %v", ins.Container.HostConfig.Tmpfs)
		}
		if ins.Container.HostConfig.NetworkMode != "host" {
			t.Errorf("network mode %q, want host", ins.Container.HostConfig.NetworkMode)
		}
		if got := ins.Container.Config.Labels[docker.LabelOwner]; got != p.Owner() {
			t.Errorf("owner label %q, want %q", got, p.Owner())
		}
		if _, ok := ins.Container.Config.Labels[docker.LabelInstance]; !ok {
			t.Errorf("no %s label: %v", docker.LabelInstance, ins.Container.Config.Labels)
		}
		var datadir string
		if err := admin(t, inst).QueryRow("SELECT @@datadir").Scan(&datadir); err != nil {
			t.Fatalf("admin connection: %v", err)
		}
		if strings.TrimSuffix(datadir, "/") != docker.Datadir {
			t.Errorf("server datadir %q, want %s", datadir, docker.Datadir)
		}

		// root is not reachable over TCP (only by Unix socket inside the
		// container), with or without a password guess.
		host, port := inst.ClientAddr()
		if err := connect(t, host, port, "root", "", "").Ping(); err == nil {
			t.Error("root logged in over TCP without a password")
		}

		if err := inst.Stop(context.Background()); err != nil {
			t.Fatalf("stop: %v", err)
		}
		select {
		case <-inst.Done():
		default:
			t.Error("Done not closed after Stop")
		}
		if inst.Err() != nil {
			t.Errorf("Err after a deliberate stop: %v", inst.Err())
		}
		if _, err := engine.ContainerInspect(context.Background(), info.ContainerID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
			t.Errorf("container %s still exists after Stop (inspect: %v)", info.ContainerID, err)
		}
		if err := inst.Stop(context.Background()); err != nil {
			t.Errorf("second stop: %v", err)
		}
	})
}

// TestFleetSettings starts a server through the fleet, which reads every
// disposable-data setting back over the admin connection.
func TestFleetSettings(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		p := newProvider(t, config(t, image))
		f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := f.Start(ctx)
		if err != nil {
			t.Fatalf("fleet start: %v", err)
		}
		info, dbs := s.Describe(ctx)
		if len(info.Settings) < 15 {
			t.Fatalf("only %d settings read back", len(info.Settings))
		}
		for _, st := range info.Settings {
			if !st.OK {
				t.Errorf("setting %s: asked %s, server runs with %s", st.Name, st.Requested, st.Actual)
			}
		}
		if dbs != 0 {
			t.Errorf("%d databases on a fresh server, want 0", dbs)
		}
	})
}

// TestLeaseUser creates a user the way leases do ('u'@'%' with a password,
// privileges on one database) and connects with it over TCP from the host.
func TestLeaseUser(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		p := newProvider(t, config(t, image))
		inst := start(t, p)
		adm := admin(t, inst)
		_, err := adm.Exec("CREATE DATABASE w1; CREATE DATABASE other; " +
			"CREATE USER 'u'@'%' IDENTIFIED BY 'secret-1'; GRANT ALL PRIVILEGES ON w1.* TO 'u'@'%'")
		if err != nil {
			t.Fatalf("create lease user: %v", err)
		}
		host, port := inst.ClientAddr()
		db := connect(t, host, port, "u", "secret-1", "w1")
		if _, err := db.Exec("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT)"); err != nil {
			t.Fatalf("lease user: %v", err)
		}
		if _, err := db.Exec("INSERT INTO t (v) VALUES ('x')"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
			t.Fatalf("count: %d, %v", n, err)
		}
		if _, err := db.Exec("CREATE TABLE other.t (id INT)"); err == nil {
			t.Error("the lease user could write to another database")
		}
		if err := connect(t, host, port, "u", "wrong", "w1").Ping(); err == nil {
			t.Error("a wrong password was accepted")
		}
	})
}

// TestCloseRemovesContainers checks that Close leaves no container.
func TestCloseRemovesContainers(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		needEngine(t)
		cfg := config(t, image)
		p, err := docker.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		closed := false
		t.Cleanup(func() {
			if !closed {
				_ = p.Close(context.Background())
			}
		})
		for range 2 {
			if _, err := p.Start(context.Background(), testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{})}); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(containers(t, p.Owner())); n != 2 {
			t.Fatalf("%d containers running, want 2", n)
		}
		closed = true
		if err := p.Close(context.Background()); err != nil {
			t.Fatalf("close: %v", err)
		}
		if left := containers(t, p.Owner()); len(left) > 0 {
			t.Errorf("containers left after Close: %v", left)
		}
		if _, err := p.Start(context.Background(), testdbd.StartOptions{}); testdbd.ErrorCode(err) != testdbd.EUnavailable {
			t.Errorf("start after close: %v", err)
		}
	})
}

// TestSweepAfterKill: a provider abandoned without Close (its daemon killed
// with -9) leaves its containers running; the next provider of the same
// state directory removes them, and never touches another state
// directory's containers.
func TestSweepAfterKill(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		needEngine(t)
		cfgA := config(t, image)
		a, err := docker.New(context.Background(), cfgA)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, id := range containers(t, a.Owner()) {
				_, _ = engine.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
			}
		})
		instA := start(t, a)
		idA := instA.Info(context.Background()).ContainerID
		a.Abandon()

		b := newProvider(t, config(t, image))
		instB := start(t, b)

		if got := containers(t, a.Owner()); len(got) != 1 || got[0] != idA {
			t.Fatalf("abandoned provider's containers: %v, want [%s]", got, idA)
		}
		a2 := newProvider(t, cfgA)
		if a2.Owner() != a.Owner() {
			t.Fatalf("same state directory, owners %s and %s", a.Owner(), a2.Owner())
		}
		if got := containers(t, a.Owner()); len(got) != 0 {
			t.Errorf("containers of the killed daemon remain after restart: %v", got)
		}
		// The other daemon's server is untouched and still answers.
		if got := containers(t, b.Owner()); len(got) != 1 {
			t.Errorf("other state directory's containers: %v, want 1", got)
		}
		select {
		case <-instB.Done():
			t.Fatalf("the other daemon's server died: %v", instB.Err())
		default:
		}
		if err := admin(t, instB).Ping(); err != nil {
			t.Errorf("other daemon's server: %v", err)
		}
	})
}

// TestKilledContainerNoticed: a container killed behind testdbd's back
// closes Done within seconds, and Err says what happened.
func TestKilledContainerNoticed(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		p := newProvider(t, config(t, image))
		inst := start(t, p)
		id := inst.Info(context.Background()).ContainerID
		killed := time.Now()
		if _, err := engine.ContainerKill(context.Background(), id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-inst.Done():
			t.Logf("noticed after %v", time.Since(killed).Round(time.Millisecond))
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed within 10 s of docker kill")
		}
		if err := inst.Err(); err == nil || !strings.Contains(err.Error(), "exited with status 137 (128+9: killed by signal 9, SIGKILL)") ||
			strings.Contains(err.Error(), "says") {
			t.Errorf("Err = %v, want the signal and no log lines", err)
		}
		if st := inst.Info(context.Background()).State; st != testdbd.InstanceFailed {
			t.Errorf("state %q after kill, want failed", st)
		}
		if err := inst.Stop(context.Background()); err != nil {
			t.Errorf("stop after kill: %v", err)
		}
		if left := containers(t, p.Owner()); len(left) > 0 {
			t.Errorf("killed container not removed by Stop: %v", left)
		}
	})
}

// TestInitializeWithoutSeed exercises the path the official images take:
// the datadir is initialized in the container by the engine's own tool
// (mariadb-install-db here) instead of copied from a pristine seed.
func TestInitializeWithoutSeed(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		cfg := config(t, image)
		cfg.NoSeed = true
		p := newProvider(t, cfg)
		f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		s, err := f.Start(context.Background())
		if err != nil {
			t.Fatalf("fleet start: %v", err)
		}
		if bad := testdbd.Mismatched(s.Info(context.Background()).Settings); len(bad) > 0 {
			t.Errorf("settings that did not take: %v", bad)
		}
		var n int
		if err := s.DB.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE user = 'root'").Scan(&n); err != nil || n == 0 {
			t.Errorf("system tables: %d root accounts, %v", n, err)
		}
	})
}

func TestErrors(t *testing.T) {
	needEngine(t)
	image := docker.DefaultImage
	if len(cells) > 0 && cells[0].Image != "" {
		image = cells[0].Image
	}
	t.Run("missing image", func(t *testing.T) {
		cfg := config(t, image)
		cfg.Image = "testdbd/no-such-image:missing"
		_, err := docker.New(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "make images") || !strings.Contains(err.Error(), "--image") {
			t.Errorf("missing image: %v", err)
		}
		if testdbd.ErrorCode(err) != testdbd.EUnavailable {
			t.Errorf("code %s, want unavailable", testdbd.ErrorCode(err))
		}
	})
	t.Run("state directory in use", func(t *testing.T) {
		cfg := config(t, image)
		newProvider(t, cfg)
		_, err := docker.New(context.Background(), cfg)
		if testdbd.ErrorCode(err) != testdbd.EConflict {
			t.Errorf("second provider on one state directory: %v", err)
		}
	})
	t.Run("no state directory", func(t *testing.T) {
		if _, err := docker.New(context.Background(), docker.Config{}); testdbd.ErrorCode(err) != testdbd.EInvalid {
			t.Errorf("no state dir: %v", err)
		}
	})
}

// TestOfficialImageLayout runs an image laid out like the official mysql and
// mariadb images (an entrypoint script, CMD, EXPOSE 3306 33060, VOLUME
// /var/lib/mysql, a non-root USER, no seed), made from the local image since
// the official ones cannot be pulled here. testdbd's own start command must
// replace the entrypoint, run as root, initialize the datadir with
// mariadb-install-db or mysqld --initialize-insecure, and leave no
// anonymous volume behind.
func TestOfficialImageLayout(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		needEngine(t)
		ctx := context.Background()
		created, err := engine.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &container.Config{Image: image},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer engine.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
		ref := "testdbd/official-layout:test-" + strconv.Itoa(os.Getpid()) + "-" + random.Hex(3)
		_, err = engine.ContainerCommit(ctx, created.ID, client.ContainerCommitOptions{Reference: ref, Changes: []string{
			`ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]`, `CMD ["mariadbd"]`,
			`EXPOSE 3306 33060`, `VOLUME /var/lib/mysql`, `USER mysql`,
		}})
		if err != nil {
			t.Fatalf("commit an official-like image: %v", err)
		}
		t.Cleanup(func() {
			_, _ = engine.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		})
		volumes := func() int {
			list, err := engine.VolumeList(ctx, client.VolumeListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return len(list.Items)
		}
		before := volumes()

		cfg := config(t, image)
		cfg.Image, cfg.NoSeed = ref, true
		p := newProvider(t, cfg)
		f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
		s, err := f.Start(ctx)
		if err != nil {
			t.Fatalf("fleet start: %v", err)
		}
		info := s.Info(ctx)
		if bad := testdbd.Mismatched(info.Settings); len(bad) > 0 || !info.DatadirOnTmpfs {
			t.Errorf("settings not taken %v, datadir on tmpfs %v", bad, info.DatadirOnTmpfs)
		}
		var user string
		if err := s.DB.QueryRow("SELECT CURRENT_USER()").Scan(&user); err != nil {
			t.Fatalf("admin: %v", err)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if after := volumes(); after != before {
			t.Errorf("%d volumes before, %d after: an anonymous volume was left for /var/lib/mysql", before, after)
		}
	})
}

// TestStartsInFlight: a start whose context ends while its container is
// being created or started leaves no container behind, and neither does a
// Close that comes while starts are in flight: they are cancelled and
// waited for before the last sweep.
func TestStartsInFlight(t *testing.T) {
	eachImage(t, func(t *testing.T, image string) {
		p := newProvider(t, config(t, image))
		args := instance.Args(p.Engine(), instance.Config{})
		created := func() {
			t.Helper()
			deadline := time.Now().Add(time.Minute)
			for len(containers(t, p.Owner())) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no container appeared within a minute of the start")
				}
				time.Sleep(5 * time.Millisecond)
			}
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			inst, err := p.Start(ctx, testdbd.StartOptions{Args: args})
			if err == nil {
				_ = inst.Stop(context.Background())
			}
			done <- err
		}()
		created()
		cancel()
		if err := <-done; err == nil {
			t.Log("the start finished before its cancellation; nothing to check for it")
		}
		if left := containers(t, p.Owner()); len(left) > 0 {
			t.Errorf("containers left after a cancelled start: %v", left)
		}

		starts := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := p.Start(context.Background(), testdbd.StartOptions{Args: args})
				starts <- err
			}()
		}
		created()
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		for range 3 {
			<-starts // each either failed or was stopped by Close
		}
		if left := containers(t, p.Owner()); len(left) > 0 {
			t.Errorf("containers left after a Close during starts: %v", left)
		}
	})
}
