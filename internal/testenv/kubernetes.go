package testenv

// The Kubernetes provider for tests, so that they can run table-driven
// against it too. The cluster is the local one `make k8s-up` starts (its
// admin kubeconfig is .tools/k8s/admin.kubeconfig in the repository), or
// the one TESTDBD_TEST_KUBECONFIG names; never $KUBECONFIG, which may
// name a cluster that is not for tests. Every helper skips the test,
// saying why, in the quick tier (go test -short) and when no cluster answers, and registers cleanup that deletes
// every pod of the test's provider even when the test fails.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/docker"
	"github.com/testdbd/testdbd/instance/kubernetes"
)

var (
	k8sOnce   sync.Once
	k8sClient k8s.Interface
	noCluster string // why no cluster answers; empty when one does
)

// Kubeconfig is the kubeconfig of the test cluster: TESTDBD_TEST_KUBECONFIG,
// or the local cluster's .tools/k8s/admin.kubeconfig in the repository.
func Kubeconfig() string {
	if v := os.Getenv("TESTDBD_TEST_KUBECONFIG"); v != "" {
		return v
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".tools", "k8s", "admin.kubeconfig")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// KubernetesClient returns a client of the test cluster, or nil with the
// reason why there is none (no kubeconfig, no answer).
func KubernetesClient() (k8s.Interface, string) {
	k8sOnce.Do(func() {
		path := Kubeconfig()
		if _, err := os.Stat(path); err != nil || path == "" {
			noCluster = fmt.Sprintf("no Kubernetes cluster for tests: %s does not exist (make k8s-up starts the local one, or set TESTDBD_TEST_KUBECONFIG)", path)
			return
		}
		rc, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			noCluster = fmt.Sprintf("no Kubernetes cluster for tests: read %s: %v", path, err)
			return
		}
		cs, err := k8s.NewForConfig(rc)
		if err != nil {
			noCluster = fmt.Sprintf("no Kubernetes cluster for tests: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			noCluster = fmt.Sprintf("no Kubernetes cluster for tests: the one in %s does not answer (%v): make k8s-up", path, err)
			return
		}
		k8sClient = cs
	})
	return k8sClient, noCluster
}

// KubernetesConfig returns a provider configuration for a test: its own
// state directory, the test image, small volumes and memory.
func KubernetesConfig(tb testing.TB) kubernetes.Config {
	return kubernetes.Config{
		StateDir: StateDir(tb), Kubeconfig: Kubeconfig(), Image: docker.DefaultImage,
		TmpfsBytes: 512 << 20, MemoryLimit: 1 << 30, MemoryRequest: 256 << 20, Logger: Logger(tb),
	}
}

// Kubernetes starts a Kubernetes provider and closes it at the end of the
// test, failing the test if any of its pods remain. The image must be
// loaded into the cluster (make k8s-load-image IMAGE=...).
func Kubernetes(tb testing.TB) *kubernetes.Provider {
	tb.Helper()
	return KubernetesWith(tb, KubernetesConfig(tb))
}

// KubernetesWith is Kubernetes with cfg.
func KubernetesWith(tb testing.TB, cfg kubernetes.Config) *kubernetes.Provider {
	tb.Helper()
	NeedFull(tb, "the Kubernetes cell")
	cs, reason := KubernetesClient()
	if cs == nil {
		tb.Skip(reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := kubernetes.New(ctx, cfg)
	if err != nil {
		tb.Fatalf("kubernetes provider: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("close kubernetes provider: %v", err)
		}
		if left := Pods(tb, p.Namespace(), p.Owner()); len(left) > 0 {
			tb.Errorf("kubernetes provider left pods: %v", left)
		}
	})
	return p
}

// Pods lists the names of the pods in namespace labelled with owner.
func Pods(tb testing.TB, namespace, owner string) []string {
	tb.Helper()
	cs, reason := KubernetesClient()
	if cs == nil {
		tb.Fatal(reason)
	}
	list, err := cs.CoreV1().Pods(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: kubernetes.LabelOwner + "=" + owner})
	if err != nil {
		tb.Fatalf("list pods: %v", err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// kubernetesCell is the Kubernetes entry of Providers: Kill deletes the
// server's pod at once (no grace period), as a node's loss or a person's
// `kubectl delete pod --force` would.
func kubernetesCell() Provider {
	return Provider{
		Name: "kubernetes-mariadb-10.11", ID: "kubernetes-mariadb-10.11", Kind: "kubernetes", Image: docker.DefaultImage,
		New: func(tb testing.TB) testdbd.Provider { return Kubernetes(tb) },
		Kill: func(tb testing.TB, s *instance.Member) {
			srv, ok := s.Instance.(*kubernetes.Pod)
			if !ok {
				tb.Fatalf("not a kubernetes server: %T", s.Instance)
			}
			cs, reason := KubernetesClient()
			if cs == nil {
				tb.Fatal(reason)
			}
			ns, name := srv.PodName()
			grace := int64(0)
			if err := cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
				tb.Fatalf("delete pod %s/%s: %v", ns, name, err)
			}
		},
	}
}
