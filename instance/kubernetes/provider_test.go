package kubernetes_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/kubernetes"
	"github.com/testdbd/testdbd/internal/testenv"
)

// client returns the test cluster's admin client, skipping the test when
// no cluster answers (make k8s-up starts the local one).
func client(t *testing.T) k8s.Interface {
	t.Helper()
	testenv.NeedFull(t, "the Kubernetes cell")
	cs, reason := testenv.KubernetesClient()
	if cs == nil {
		t.Skip(reason)
	}
	return cs
}

func newProvider(t *testing.T, cfg kubernetes.Config) *kubernetes.Provider {
	t.Helper()
	return testenv.KubernetesWith(t, cfg)
}

func start(t *testing.T, p *kubernetes.Provider) *kubernetes.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := p.Start(ctx, testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{})})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	return inst.(*kubernetes.Pod)
}

// fleetServer starts one server through a fleet, which reads every setting
// back over the admin connection.
func fleetServer(t *testing.T, p *kubernetes.Provider) *instance.Member {
	t.Helper()
	f := instance.NewFleet(p, instance.FleetConfig{MaxInstances: 1, Logger: testenv.Logger(t)})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := f.Start(ctx)
	if err != nil {
		t.Fatalf("fleet start: %v", err)
	}
	return s
}

func getPod(t *testing.T, s *kubernetes.Pod) *corev1.Pod {
	t.Helper()
	ns, name := s.PodName()
	pod, err := client(t).CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod: %v", err)
	}
	return pod
}

func podGone(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := client(t).CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get pod: %v", err)
	}
	return apierrors.IsNotFound(err)
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

// kubectl runs the local cluster's kubectl, when there is one.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(filepath.Dir(testenv.Kubeconfig())), "k8s", "bin", "kubectl")
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("no kubectl (make k8s-up builds one into .tools/k8s/bin)")
		}
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", testenv.Kubeconfig()}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestStartStop starts a server through the fleet and checks what the
// pod is made of: a memory-backed datadir of the configured size (in the
// pod's spec, and as a tmpfs inside the container), the memory request
// and limit, the owner label, no service account token; that the settings
// took; that root cannot log in over TCP; and that Stop deletes the pod.
func TestStartStop(t *testing.T) {
	client(t)
	cfg := testenv.KubernetesConfig(t)
	p := newProvider(t, cfg)
	if f := p.Engine().Flavor; f != testdbd.MariaDB && f != testdbd.MySQL {
		t.Fatalf("engine flavor %q", f)
	}
	if p.Name() != "kubernetes" {
		t.Errorf("Name() = %q", p.Name())
	}
	m := fleetServer(t, p)
	s := m.Instance.(*kubernetes.Pod)
	ns, name := s.PodName()

	info := m.Info(context.Background())
	if len(info.Settings) < 15 {
		t.Errorf("only %d settings read back", len(info.Settings))
	}
	if bad := testdbd.Mismatched(info.Settings); len(bad) > 0 {
		t.Errorf("settings that did not take: %v", bad)
	}
	pod := getPod(t, s)
	if info.Provider != "kubernetes" || info.Image != cfg.Image || info.ContainerID != ns+"/"+name ||
		info.Datadir != kubernetes.Datadir || info.State != testdbd.InstanceRunning || info.StartupTime == 0 {
		t.Errorf("info: %+v", info)
	}
	if host, port := s.ClientAddr(); host != pod.Status.PodIP || port != 3306 || info.Host != host {
		t.Errorf("client address %s:%d, info %s, pod IP %s", host, port, info.Host, pod.Status.PodIP)
	}
	if !info.DatadirOnTmpfs {
		t.Errorf("datadir %s is not reported on a memory volume", info.Datadir)
	}
	// On the local cluster the daemon runs on the node, as root: memory and
	// datadir use are read from the pod's cgroup and mount namespace.
	if os.Geteuid() == 0 && (info.PID == 0 || info.MemoryBytes == 0 || info.DatadirBytes == 0 || info.FootprintBytes != info.MemoryBytes) {
		t.Errorf("usage not read on the node: pid %d, memory %d, datadir %d, footprint %d",
			info.PID, info.MemoryBytes, info.DatadirBytes, info.FootprintBytes)
	}
	t.Logf("started in %v, memory %d MiB, datadir %d MiB", info.StartupTime, info.MemoryBytes>>20, info.DatadirBytes>>20)

	// The pod's spec, as the API server holds it.
	var data *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == "data" {
			data = &pod.Spec.Volumes[i]
		}
	}
	want := resource.NewQuantity(cfg.TmpfsBytes, resource.BinarySI)
	if data == nil || data.EmptyDir == nil || data.EmptyDir.Medium != corev1.StorageMediumMemory ||
		data.EmptyDir.SizeLimit == nil || data.EmptyDir.SizeLimit.Cmp(*want) != 0 {
		t.Errorf("datadir volume %+v, want a memory emptyDir of %s", data, want)
	}
	c := pod.Spec.Containers[0]
	mounted := false
	for _, vm := range c.VolumeMounts {
		mounted = mounted || (vm.Name == "data" && vm.MountPath == kubernetes.Datadir)
	}
	if !mounted {
		t.Errorf("volume data not mounted at %s: %+v", kubernetes.Datadir, c.VolumeMounts)
	}
	if lim, req := c.Resources.Limits.Memory(), c.Resources.Requests.Memory(); lim.Value() != cfg.MemoryLimit || req.Value() != cfg.MemoryRequest {
		t.Errorf("memory limit %v request %v, want %d and %d", lim, req, cfg.MemoryLimit, cfg.MemoryRequest)
	}
	if pod.Labels[kubernetes.LabelOwner] != p.Owner() || pod.Labels[kubernetes.LabelInstance] != s.ID() {
		t.Errorf("labels %v", pod.Labels)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the server pod mounts a service account token")
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restart policy %s", pod.Spec.RestartPolicy)
	}

	// Inside the container the datadir is a tmpfs of that size.
	mounts, err := kubectl(t, "exec", "-n", ns, name, "--", "cat", "/proc/mounts")
	if err != nil {
		t.Fatalf("kubectl exec: %v: %s", err, mounts)
	}
	var out string
	for _, line := range strings.Split(mounts, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == kubernetes.Datadir {
			out = line
		}
	}
	if f := strings.Fields(out); len(f) < 4 || f[2] != "tmpfs" || !strings.Contains(f[3], "size="+strconv.FormatInt(cfg.TmpfsBytes>>10, 10)+"k") {
		t.Errorf("datadir mount inside the pod: %q, want a tmpfs of %d KiB", out, cfg.TmpfsBytes>>10)
	}
	var datadir string
	if err := m.DB.QueryRow("SELECT @@datadir").Scan(&datadir); err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	if strings.TrimSuffix(datadir, "/") != kubernetes.Datadir {
		t.Errorf("server datadir %q, want %s", datadir, kubernetes.Datadir)
	}

	// root is not reachable over TCP (only by Unix socket in the container).
	host, port := s.ClientAddr()
	if err := connect(t, host, port, "root", "", "").Ping(); err == nil {
		t.Error("root logged in over TCP without a password")
	}

	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if s.Err() != nil {
		t.Errorf("Err after a deliberate stop: %v", s.Err())
	}
	if !podGone(t, ns, name) {
		t.Errorf("pod %s/%s still exists after Stop", ns, name)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

// TestLeaseUser creates a user the way leases do ('u'@'%' with a password,
// privileges on one database) and connects with it over TCP from the host
// to the address leases get, the pod's IP.
func TestLeaseUser(t *testing.T) {
	client(t)
	p := newProvider(t, testenv.KubernetesConfig(t))
	s := start(t, p)
	adm, err := instance.OpenAdmin(s.Admin(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	_, err = adm.Exec("CREATE DATABASE w1; CREATE DATABASE other; " +
		"CREATE USER 'u'@'%' IDENTIFIED BY 'secret-1'; GRANT ALL PRIVILEGES ON w1.* TO 'u'@'%'")
	if err != nil {
		t.Fatalf("create lease user: %v", err)
	}
	host, port := s.ClientAddr()
	db := connect(t, host, port, "u", "secret-1", "w1")
	if _, err := db.Exec("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatalf("lease user: %v", err)
	}
	if _, err := db.Exec("INSERT INTO t (v) VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE other.t (id INT)"); err == nil {
		t.Error("the lease user could write to another database")
	}
	if err := connect(t, host, port, "u", "wrong", "w1").Ping(); err == nil {
		t.Error("a wrong password was accepted")
	}
}

// TestPodDeleted: a pod deleted behind testdbd's back, at once (grace 0),
// closes Done, and Err says so.
func TestPodDeleted(t *testing.T) {
	cs := client(t)
	p := newProvider(t, testenv.KubernetesConfig(t))
	s := start(t, p)
	ns, name := s.PodName()
	grace := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done not closed within a minute of the pod's deletion")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("Err = %v, want the pod's unexpected deletion", err)
	}
	if st := s.Info(context.Background()).State; st != testdbd.InstanceFailed {
		t.Errorf("state %q after the deletion, want failed", st)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("stop after the deletion: %v", err)
	}
}

// TestContainerKilled: the server process killed with SIGKILL from the
// node (the container ends with 137) closes Done, and Err says how it
// ended, with the pod's name.
func TestContainerKilled(t *testing.T) {
	client(t)
	if os.Geteuid() != 0 {
		t.Skip("killing the container from the node needs root")
	}
	p := newProvider(t, testenv.KubernetesConfig(t))
	s := start(t, p)
	ns, name := s.PodName()
	pid := s.Info(context.Background()).PID
	if pid == 0 {
		t.Skip("the pod does not run on this host")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done not closed within a minute of the kill")
	}
	err := s.Err()
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "exit code 137") {
		t.Errorf("Err = %v, want the container's exit code 137", err)
	}
	t.Logf("Err: %v", err)
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("stop after the kill: %v", err)
	}
	if !podGone(t, ns, name) {
		t.Errorf("killed server's pod %s/%s not deleted by Stop", ns, name)
	}
}

// TestCloseDeletesPods checks that Close leaves no pod, and that the
// provider refuses to start servers afterwards.
func TestCloseDeletesPods(t *testing.T) {
	client(t)
	cfg := testenv.KubernetesConfig(t)
	p, err := kubernetes.New(context.Background(), cfg)
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
	if n := len(testenv.Pods(t, p.Namespace(), p.Owner())); n != 2 {
		t.Fatalf("%d pods running, want 2", n)
	}
	closed = true
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	if left := testenv.Pods(t, p.Namespace(), p.Owner()); len(left) > 0 {
		t.Errorf("pods left after Close: %v", left)
	}
	if _, err := p.Start(context.Background(), testdbd.StartOptions{}); testdbd.ErrorCode(err) != testdbd.EUnavailable {
		t.Errorf("start after close: %v", err)
	}
}

// TestSweepAfterKill: a provider abandoned without Close (its daemon killed
// with -9) leaves its pods running; the next provider of the same state
// directory deletes them, and never touches another owner's pods.
func TestSweepAfterKill(t *testing.T) {
	client(t)
	cfgA := testenv.KubernetesConfig(t)
	a, err := kubernetes.New(context.Background(), cfgA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range testenv.Pods(t, a.Namespace(), a.Owner()) {
			grace := int64(0)
			_ = client(t).CoreV1().Pods(a.Namespace()).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
	})
	instA := start(t, a)
	_, podA := instA.PodName()
	a.Abandon()

	b := newProvider(t, testenv.KubernetesConfig(t))
	instB := start(t, b)

	if got := testenv.Pods(t, a.Namespace(), a.Owner()); len(got) != 1 || got[0] != podA {
		t.Fatalf("abandoned provider's pods: %v, want [%s]", got, podA)
	}
	a2 := newProvider(t, cfgA)
	if a2.Owner() != a.Owner() {
		t.Fatalf("same state directory, owners %s and %s", a.Owner(), a2.Owner())
	}
	if got := testenv.Pods(t, a.Namespace(), a.Owner()); len(got) != 0 {
		t.Errorf("pods of the killed daemon remain after restart: %v", got)
	}
	if got := testenv.Pods(t, b.Namespace(), b.Owner()); len(got) != 1 {
		t.Errorf("other owner's pods: %v, want 1", got)
	}
	select {
	case <-instB.Done():
		t.Fatalf("the other daemon's server died: %v", instB.Err())
	default:
	}
	adm, err := instance.OpenAdmin(instB.Admin(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.Ping(); err != nil {
		t.Errorf("other daemon's server: %v", err)
	}
}

func TestErrors(t *testing.T) {
	client(t)
	t.Run("image not on the node", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		cfg.Image = "testdbd/no-such-image:missing"
		_, err := kubernetes.New(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "k8s-load-image") || !strings.Contains(err.Error(), "--image") {
			t.Errorf("missing image: %v", err)
		}
		if testdbd.ErrorCode(err) != testdbd.EUnavailable {
			t.Errorf("code %s, want unavailable", testdbd.ErrorCode(err))
		}
	})
	t.Run("state directory in use", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		newProvider(t, cfg)
		_, err := kubernetes.New(context.Background(), cfg)
		if testdbd.ErrorCode(err) != testdbd.EConflict {
			t.Errorf("second provider on one state directory: %v", err)
		}
	})
	t.Run("no state directory", func(t *testing.T) {
		if _, err := kubernetes.New(context.Background(), kubernetes.Config{}); testdbd.ErrorCode(err) != testdbd.EInvalid {
			t.Errorf("no state dir: %v", err)
		}
	})
	t.Run("memory limit too small", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		cfg.MemoryLimit = 100 << 20
		_, err := kubernetes.New(context.Background(), cfg)
		if testdbd.ErrorCode(err) != testdbd.EInvalid || !strings.Contains(err.Error(), "--memory-budget") {
			t.Errorf("memory limit of 100Mi: %v", err)
		}
	})
	t.Run("no such kubeconfig", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		cfg.Kubeconfig = filepath.Join(t.TempDir(), "missing")
		if _, err := kubernetes.New(context.Background(), cfg); testdbd.ErrorCode(err) != testdbd.EInvalid {
			t.Errorf("missing kubeconfig: %v", err)
		}
	})
	t.Run("no node with room", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		cfg.MemoryLimit, cfg.MemoryRequest = 1<<50, 1<<50
		p := newProvider(t, cfg)
		_, err := p.Start(context.Background(), testdbd.StartOptions{Args: instance.Args(p.Engine(), instance.Config{})})
		if testdbd.ErrorCode(err) != testdbd.EExhausted || !strings.Contains(err.Error(), "no node") {
			t.Errorf("a pod no node can hold: %v", err)
		}
	})
}

// TestOOMKilled: a server whose data outgrow the pod's memory limit (its
// datadir volume is larger) is OOM-killed, and Err says so, naming the
// limit.
func TestOOMKilled(t *testing.T) {
	client(t)
	cfg := testenv.KubernetesConfig(t)
	cfg.MemoryLimit, cfg.MemoryRequest = 320<<20, 256<<20
	p := newProvider(t, cfg)
	s := start(t, p)
	adm, err := instance.OpenAdmin(s.Admin(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.Exec("CREATE DATABASE big; CREATE TABLE big.t (id INT AUTO_INCREMENT PRIMARY KEY, v LONGTEXT)"); err != nil {
		t.Fatal(err)
	}
	// 8 MiB a row, up to twice the limit.
	for i := 0; i < 80; i++ {
		if _, err := adm.Exec("INSERT INTO big.t (v) VALUES (REPEAT('x', 8388608))"); err != nil {
			break
		}
	}
	select {
	case <-s.Done():
	case <-time.After(time.Minute):
		t.Fatal("the server outgrew its memory limit and was not killed")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "OOMKilled") || !strings.Contains(err.Error(), "320Mi") {
		t.Errorf("Err = %v, want OOMKilled and the limit", err)
	}
	t.Logf("Err: %v", s.Err())
}

// TestHardening: the server drops from the start script's root to the
// image's mysql user, and neither a lease-like account nor the admin can
// put files outside the datadir (testenv.CheckContainerHardening).
func TestHardening(t *testing.T) {
	client(t)
	testenv.CheckContainerHardening(t, fleetServer(t, newProvider(t, testenv.KubernetesConfig(t))))
}
