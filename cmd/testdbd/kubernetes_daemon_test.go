package main

import (
	"context"
	"database/sql"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/instance/kubernetes"
	"github.com/testdbd/testdbd/internal/testenv"
)

// needCluster skips the test when no test cluster answers (make k8s-up).
func needCluster(t *testing.T) k8s.Interface {
	t.Helper()
	testenv.NeedFull(t, "the Kubernetes cell")
	cs, reason := testenv.KubernetesClient()
	if cs == nil {
		t.Skip(reason)
	}
	return cs
}

// podsOf lists the pods a daemon of stateDir made (by their state-dir
// annotation), and deletes them at the end of the test whatever happens.
func podsOf(t *testing.T, stateDir string) []corev1.Pod {
	t.Helper()
	cs := needCluster(t)
	list, err := cs.CoreV1().Pods("default").List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=testdbd"})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.Annotations[kubernetes.AnnotationStateDir] == stateDir {
			pods = append(pods, p)
		}
	}
	return pods
}

func deletePodsAtEnd(t *testing.T, stateDir string) {
	t.Cleanup(func() {
		grace := int64(0)
		for _, p := range podsOf(t, stateDir) {
			_ = needCluster(t).CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name,
				metav1.DeleteOptions{GracePeriodSeconds: &grace})
		}
	})
}

// TestKubernetesDaemonREADMEFlow runs `testdbd serve --provider kubernetes
// --kubeconfig ...` on the host and drives the README's quickstart through
// its REST API: a template from examples/migrations, a lease whose
// database lives in a pod on a memory volume and is reached from the host
// on the pod's IP, a reset, a release. SIGTERM leaves no pod.
func TestKubernetesDaemonREADMEFlow(t *testing.T) {
	cs := needCluster(t)
	state := testenv.StateDir(t)
	deletePodsAtEnd(t, state)
	d := startDaemon(t, state, "--provider", "kubernetes", "--kubeconfig", testenv.Kubeconfig(),
		"--image", docker.DefaultImage, "--warm", "1", "--max-instances", "2",
		"--memory-budget", "2G", "--tmpfs-size", "512M")

	var list struct {
		Instances []struct {
			ID             string `json:"id"`
			Provider       string `json:"provider"`
			Host           string `json:"host"`
			ContainerID    string `json:"container_id"`
			DatadirOnTmpfs bool   `json:"datadir_on_tmpfs"`
			MemoryBytes    int64  `json:"memory_bytes"`
			State          string `json:"state"`
			Settings       []struct {
				Name string `json:"name"`
				OK   bool   `json:"ok"`
			} `json:"settings"`
		} `json:"instances"`
	}
	d.getJSON(t, "/v1/instances", &list)
	if len(list.Instances) != 1 {
		t.Fatalf("%d instances after --warm 1", len(list.Instances))
	}
	in := list.Instances[0]
	if in.Provider != "kubernetes" || !in.DatadirOnTmpfs || in.State != "running" || in.MemoryBytes == 0 || len(in.Settings) == 0 {
		t.Errorf("instance: %+v", in)
	}
	for _, s := range in.Settings {
		if !s.OK {
			t.Errorf("setting %s did not take", s.Name)
		}
	}
	pods := podsOf(t, state)
	if len(pods) != 1 || in.ContainerID != pods[0].Namespace+"/"+pods[0].Name {
		t.Fatalf("pods of the daemon: %d, instance's %q", len(pods), in.ContainerID)
	}
	pod := pods[0]
	// 1 GiB per server pod: --memory-budget 2G over --max-instances 2.
	if lim := pod.Spec.Containers[0].Resources.Limits.Memory(); lim.Value() != 1<<30 {
		t.Errorf("memory limit %v, want 1Gi", lim)
	}
	memory := false
	for _, v := range pod.Spec.Volumes {
		memory = memory || (v.Name == "data" && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory)
	}
	if !memory {
		t.Errorf("the pod's datadir volume is not memory-backed: %+v", pod.Spec.Volumes)
	}

	dir, _ := filepath.Abs(filepath.Join("..", "..", "examples", "migrations"))
	var tpl struct {
		State, Error string
		Tables       int
	}
	if code := d.call(t, "POST", "/v1/templates", `{"name":"app","migrations_dir":"`+dir+`"}`, &tpl); code != 200 || tpl.State != "TEMPLATE_STATE_READY" {
		t.Fatalf("ensure template: %d %+v", code, tpl)
	}
	var ls struct {
		ID         string `json:"id"`
		Host       string `json:"host"`
		Port       int    `json:"port"`
		DSN        string `json:"dsn"`
		InstanceID string `json:"instance_id"`
	}
	d.postJSON(t, "/v1/leases", map[string]any{"template": "app", "strategy": "STRATEGY_SNAPSHOT", "worker": "w1"}, &ls)
	if ls.Host != pod.Status.PodIP || ls.Port != 3306 || in.Host != ls.Host {
		t.Errorf("lease address %s:%d, want the pod's IP %s:3306", ls.Host, ls.Port, pod.Status.PodIP)
	}
	if ip := net.ParseIP(ls.Host); ip == nil {
		t.Errorf("lease host %q is not an IP", ls.Host)
	}

	cfg, err := mysql.ParseDSN(ls.DSN)
	if err != nil {
		t.Fatalf("lease dsn %q: %v", ls.DSN, err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	count := func() int {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM posts").Scan(&n); err != nil {
			t.Fatalf("lease user reads: %v", err)
		}
		return n
	}
	before := count()
	if _, err := db.Exec("INSERT INTO posts (user_id, title, body) SELECT id, 'from the host', 'x' FROM users LIMIT 1"); err != nil {
		t.Fatalf("lease user writes: %v", err)
	}
	var datadir string
	if err := db.QueryRow("SELECT @@datadir").Scan(&datadir); err != nil || strings.TrimSuffix(datadir, "/") != kubernetes.Datadir {
		t.Errorf("lease's server datadir %q (%v), want the pod's %s", datadir, err, kubernetes.Datadir)
	}
	db.Close()

	var report struct {
		TablesReset []string `json:"tables_reset"`
	}
	d.postJSON(t, "/v1/leases/"+ls.ID+":reset", map[string]any{}, &report)
	if len(report.TablesReset) == 0 {
		t.Errorf("reset put no table back: %+v", report)
	}
	db = sql.OpenDB(connector)
	defer db.Close()
	if n := count(); n != before {
		t.Errorf("%d posts after the reset, want the template's %d", n, before)
	}
	db.Close()
	if code := d.call(t, "DELETE", "/v1/leases/"+ls.ID, "", nil); code != 200 {
		t.Errorf("release: %d", code)
	}

	d.terminate(t, time.Minute)
	if left := podsOf(t, state); len(left) != 0 {
		t.Errorf("pods left after SIGTERM: %d", len(left))
	}
	if _, err := cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("pod %s still exists", pod.Name)
	}
}

// TestKubernetesDaemonKilledIsCleanedUpOnRestart: a daemon killed with -9
// leaves its pods running; the next daemon on the same state directory
// deletes them at start.
func TestKubernetesDaemonKilledIsCleanedUpOnRestart(t *testing.T) {
	needCluster(t)
	state := testenv.StateDir(t)
	deletePodsAtEnd(t, state)
	args := []string{"--provider", "kubernetes", "--kubeconfig", testenv.Kubeconfig(), "--image", docker.DefaultImage,
		"--max-instances", "2", "--memory-budget", "2G", "--tmpfs-size", "512M"}
	d := startDaemon(t, state, append(args, "--warm", "2")...)
	if n := len(podsOf(t, state)); n != 2 {
		t.Fatalf("%d pods after --warm 2", n)
	}
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	if n := len(podsOf(t, state)); n != 2 {
		t.Fatalf("after kill -9: %d pods, want the 2 servers still there", n)
	}
	d2 := startDaemon(t, state, args...)
	if left := podsOf(t, state); len(left) != 0 {
		t.Errorf("%d pods of the killed daemon remain after the restart", len(left))
	}
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	<-d2.exited
}
