package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance/kubernetes"
	"github.com/testdbd/testdbd/internal/random"
	"github.com/testdbd/testdbd/internal/testenv"
)

// manifests is the directory of the deployment manifests.
const manifests = "../../deploy/kubernetes"

// TestService: with Service set, each server gets a ClusterIP Service of
// its own, owned by its pod and selecting it alone; leases get its DNS
// name; the endpoint controller lists the pod's IP as ready behind it;
// and Stop deletes it.
func TestService(t *testing.T) {
	cs := client(t)
	cfg := testenv.KubernetesConfig(t)
	cfg.Service = true
	p := newProvider(t, cfg)
	s := start(t, p)
	ns, name := s.PodName()
	pod := getPod(t, s)
	host, port := s.ClientAddr()
	if host != name+"."+ns+".svc" || port != 3306 {
		t.Errorf("client address %s:%d, want the Service's DNS name", host, port)
	}
	if a := s.Admin(); a.Host != pod.Status.PodIP {
		t.Errorf("admin endpoint %s, want the pod's IP %s", a.Host, pod.Status.PodIP)
	}
	svc, err := cs.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the server's Service: %v", err)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP == "" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 3306 {
		t.Errorf("service spec %+v", svc.Spec)
	}
	if svc.Spec.Selector[kubernetes.LabelInstance] != s.ID() || svc.Spec.Selector[kubernetes.LabelOwner] != p.Owner() {
		t.Errorf("selector %v", svc.Spec.Selector)
	}
	if o := svc.OwnerReferences; len(o) != 1 || o[0].Kind != "Pod" || o[0].UID != pod.UID {
		t.Errorf("owner references %+v, want the pod", o)
	}
	// The endpoint controller puts the Ready pod behind the Service.
	deadline := time.Now().Add(time.Minute)
	for {
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(),
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
		if err != nil {
			t.Fatal(err)
		}
		if readyEndpoint(slices.Items, pod.Status.PodIP) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod's IP %s is not a ready endpoint of its Service within a minute: %+v", pod.Status.PodIP, slices.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Service remains after Stop: %v", err)
	}
}

func readyEndpoint(slices []discoveryv1.EndpointSlice, ip string) bool {
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			for _, a := range ep.Addresses {
				if a == ip && ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					return true
				}
			}
		}
	}
	return false
}

// TestLeastRBAC runs the provider (with Services) as the ServiceAccount of
// deploy/kubernetes/rbac.yaml, bound to nothing but its Role, in a
// namespace labelled like deploy/kubernetes/namespace.yaml (Pod Security
// "baseline" enforced): it must start a server that answers, and stop it.
// An account without the Role is refused at start with what it lacks.
func TestLeastRBAC(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	nsObj := decode(t, "namespace.yaml")[0].(*corev1.Namespace)
	ns := "testdbd-rbac-" + random.Hex(3)
	nsObj.Name = ns
	if _, err := cs.CoreV1().Namespaces().Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, ns) })
	for _, obj := range decode(t, "rbac.yaml") {
		var err error
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = cs.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected object in rbac.yaml: %T", obj)
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("unbound account", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		cfg.Kubeconfig, cfg.Namespace, cfg.Service = tokenKubeconfig(t, ns, "nobody"), ns, true
		_, err := kubernetes.New(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "create pods") || !strings.Contains(err.Error(), "rbac.yaml") {
			t.Errorf("an account without the Role: %v", err)
		}
	})
	t.Run("the daemon's account", func(t *testing.T) {
		cfg := testenv.KubernetesConfig(t)
		cfg.Kubeconfig, cfg.Namespace, cfg.Service = tokenKubeconfig(t, ns, "testdbd"), ns, true
		p := newProvider(t, cfg)
		m := fleetServer(t, p)
		if bad := testdbd.Mismatched(m.Settings); len(bad) > 0 {
			t.Errorf("settings that did not take: %v", bad)
		}
		if err := m.DB.Ping(); err != nil {
			t.Fatal(err)
		}
		// Its death is noticed through the account's watch, and the logs
		// it may read say why.
		srv := m.Instance.(*kubernetes.Pod)
		_, name := srv.PodName()
		grace := int64(0)
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-srv.Done():
		case <-time.After(time.Minute):
			t.Fatal("the deletion was not noticed within a minute")
		}
		if err := srv.Err(); err == nil || !strings.Contains(err.Error(), "deleted") {
			t.Errorf("Err = %v", err)
		}
	})
}

// TestManifestsServerDryRun applies deploy/kubernetes (kustomize) with
// --dry-run=server: the API server validates and admits every object
// (the Deployment under the namespace's Pod Security level) without
// keeping any.
func TestManifestsServerDryRun(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	nsObj := decode(t, "namespace.yaml")[0].(*corev1.Namespace)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, nsObj.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Skipf("namespace %s exists already (%v): not touching it", nsObj.Name, err)
	}
	// Namespaced objects cannot be dry-run into a namespace that does not
	// exist; this one is real, and deleted afterwards.
	t.Cleanup(func() { deleteNamespace(t, nsObj.Name) })
	if out, err := kubectl(t, "apply", "-f", filepath.Join(manifests, "namespace.yaml")); err != nil {
		t.Fatalf("create namespace %s: %v: %s", nsObj.Name, err, out)
	}
	out, err := kubectl(t, "apply", "--dry-run=server", "-k", manifests)
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k %s: %v\n%s", manifests, err, out)
	}
	t.Logf("%s", out)
	for _, want := range []string{"serviceaccount/testdbd", "role.rbac.authorization.k8s.io/testdbd",
		"rolebinding.rbac.authorization.k8s.io/testdbd", "service/testdbd", "deployment.apps/testdbd"} {
		if !regexp.MustCompile(regexp.QuoteMeta(want) + ` (created|configured|unchanged) \(server dry run\)`).MatchString(out) {
			t.Errorf("%s not admitted:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Warning") {
		t.Errorf("the API server warned:\n%s", out)
	}
	list, err := cs.AppsV1().Deployments(nsObj.Name).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("a server dry run kept deployments: %v %v", list, err)
	}
}

// decode reads the objects of one manifest file.
func decode(t *testing.T, file string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(manifests, file))
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// tokenKubeconfig writes a kubeconfig for the test cluster that
// authenticates as a service account with a short-lived token.
func tokenKubeconfig(t *testing.T, ns, account string) string {
	t.Helper()
	cs := client(t)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, account, err)
	}
	admin, err := clientcmd.LoadFromFile(testenv.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdConfig(cluster.Server, cluster.CertificateAuthorityData, tok.Status.Token, ns)
	path := filepath.Join(t.TempDir(), account+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func clientcmdConfig(server string, ca []byte, token, ns string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	cfg.CurrentContext = "x"
	return cfg
}

// deleteNamespace deletes a namespace and waits until it is gone.
func deleteNamespace(t *testing.T, ns string) {
	cs := client(t)
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete namespace %s: %v", ns, err)
		return
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("namespace %s not gone within 2 minutes: %v", ns, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
