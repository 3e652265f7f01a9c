package kubernetes

import (
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

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/random"
)

// DefaultImage is the image `make image` builds from the host's MariaDB
// packages (scripts/build-image.sh); on a cluster it must be loaded into
// the nodes' container runtime or pushed to a registry they pull from.
const DefaultImage = "testdbd/mariadb:10.11-local"

// DefaultTmpfsBytes is the size limit of each server's memory-backed
// datadir volume.
const DefaultTmpfsBytes = 2 << 30

// Memory of a server besides its data, for the pod's memory limit.
const (
	// serverReserve is added to TmpfsBytes for the default memory limit:
	// the buffer pool, caches, connections and the start script.
	serverReserve = 512 << 20
	// MinMemoryLimit is the smallest memory limit accepted: an idle server
	// with an empty datadir takes about half of it.
	MinMemoryLimit = 256 << 20
)

// Server port inside each pod; every pod has its own address, so all use
// the same port.
const serverPort = 3306

// The labels (and annotations) on every pod and Service of testdbd. The
// label keys are those of the Docker provider's containers.
const (
	// LabelOwner identifies the daemon: by default a hash of the host name
	// and the state directory. Sweeps delete objects with its own value only.
	LabelOwner = "io.testdbd.owner"
	// LabelInstance is the instance id ("version" for the engine probe).
	LabelInstance = "io.testdbd.instance"
	// AnnotationStateDir and AnnotationHost say which daemon made the pod,
	// for people reading `kubectl describe`.
	AnnotationStateDir = "io.testdbd.state-dir"
	AnnotationHost     = "io.testdbd.host"
)

// startupTimeout bounds one server's start; stopTimeout one pod's removal.
const (
	startupTimeout = 2 * time.Minute
	stopTimeout    = time.Minute
)

// Config configures a Provider.
type Config struct {
	// StateDir identifies this daemon's pods (LabelOwner is derived from it
	// unless Owner is set) and holds the lock that keeps a second daemon
	// off it. Required.
	StateDir string
	// Kubeconfig is the path of a kubeconfig file. Empty means $KUBECONFIG,
	// then ~/.kube/config, then the in-cluster configuration of the pod
	// the daemon runs in (its service account).
	Kubeconfig string
	// Namespace holds the server pods. Empty means the kubeconfig context's
	// namespace, in a pod its own namespace, else "default".
	Namespace string
	// Image is the server image; nodes must have it or be able to pull it.
	// Empty means DefaultImage.
	Image string
	// TmpfsBytes is the size limit (sizeLimit) of each pod's memory-backed
	// datadir and tmpdir volumes; 0 means DefaultTmpfsBytes.
	TmpfsBytes int64
	// MemoryLimit is each server container's memory limit; the datadir's
	// pages count against it. 0 means TmpfsBytes plus 512 MiB.
	MemoryLimit int64
	// MemoryRequest is each server container's memory request; 0 means
	// MemoryLimit.
	MemoryRequest int64
	// Service gives each server a ClusterIP Service of its own, and leases
	// its DNS name instead of the pod's IP.
	Service bool
	// Owner is the LabelOwner value; empty means a hash of the host name
	// and StateDir. Set it where the host name changes on every restart (a
	// daemon in a Deployment's pod), unique per daemon: a daemon deletes
	// every pod of its owner value at start.
	Owner string
	// CA signs the TLS certificate of each server that has a Service (a
	// pod's IP is known only once the pod runs, too late for its
	// certificate); nil means the authority kept in StateDir/tls (created
	// when missing).
	CA *tlsca.Authority
	// Logger receives progress; nil means slog.Default().
	Logger *slog.Logger
}

// Provider starts servers as pods. It is safe for concurrent use.
type Provider struct {
	cfg    Config
	log    *slog.Logger
	api    *api
	ns     string
	host   string // the cluster's address, for messages
	owner  string // LabelOwner value
	engine testdbd.Engine
	lock   *os.File // flock on StateDir/lock
	ca     *tlsca.Authority

	stopInformer context.CancelFunc // ends the pod informer; nil when none runs
	wg           sync.WaitGroup     // the informer and the exit reporters

	mu      sync.Mutex
	servers map[string]*Pod // by pod name
	closed  bool
}

var _ testdbd.Provider = (*Provider)(nil)

// New connects to the cluster, checks that the daemon may manage pods (and
// Services) in the namespace, takes the state directory (refusing one
// another daemon holds), deletes the pods and Services a killed daemon of
// the same owner left behind, detects the image's engine by running
// `mariadbd --version` (or mysqld) in a short-lived pod, and starts
// watching its pods.
func New(ctx context.Context, cfg Config) (_ *Provider, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	p := &Provider{cfg: cfg, log: cfg.Logger, servers: map[string]*Pod{}}
	if p.log == nil {
		p.log = slog.Default()
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	p.cfg.StateDir = abs
	if p.owner, err = ownerValue(cfg.Owner, abs); err != nil {
		return nil, err
	}
	if err := p.connect(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if p.lock, err = instance.LockStateDir(abs); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = p.lock.Close()
		}
	}()
	if p.ca = cfg.CA; p.ca == nil && cfg.Service {
		if p.ca, err = tlsca.Open(filepath.Join(abs, "tls")); err != nil {
			return nil, err
		}
	}
	if err := p.sweep(ctx, "deleted a pod left by a previous daemon"); err != nil {
		return nil, err
	}
	if p.engine, err = p.detectEngine(ctx); err != nil {
		return nil, err
	}
	if err := p.watchPods(ctx); err != nil {
		return nil, err
	}
	if cfg.MemoryLimit < cfg.TmpfsBytes+MinMemoryLimit {
		p.log.Warn("a server pod's memory limit leaves its datadir less room than the tmpfs size: a server whose data grow that far is OOM-killed before its volume is full",
			"memory_limit", mib(cfg.MemoryLimit), "tmpfs", mib(cfg.TmpfsBytes))
	}
	p.log.Info("kubernetes provider ready", "cluster", p.host, "namespace", p.ns, "image", cfg.Image,
		"engine", p.engine.String(), "owner", p.owner, "memory_limit", mib(cfg.MemoryLimit),
		"memory_request", mib(cfg.MemoryRequest), "tmpfs", mib(cfg.TmpfsBytes), "service", cfg.Service)
	return p, nil
}

// withDefaults returns cfg with the defaults in place of what it leaves
// out, or why it cannot be used.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.StateDir == "" {
		return cfg, testdbd.Errorf(testdbd.EInvalid, "kubernetes provider: a state directory is required")
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.TmpfsBytes == 0 {
		cfg.TmpfsBytes = DefaultTmpfsBytes
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = cfg.TmpfsBytes + serverReserve
	}
	if cfg.MemoryRequest == 0 {
		cfg.MemoryRequest = cfg.MemoryLimit
	}
	if cfg.MemoryLimit < MinMemoryLimit {
		return cfg, testdbd.Errorf(testdbd.EInvalid,
			"kubernetes provider: a memory limit of %s per server pod is below the %s a server needs: raise --memory-budget or lower --max-instances",
			mib(cfg.MemoryLimit), mib(MinMemoryLimit))
	}
	if cfg.MemoryRequest > cfg.MemoryLimit {
		return cfg, testdbd.Errorf(testdbd.EInvalid, "kubernetes provider: memory request %s exceeds the limit %s",
			mib(cfg.MemoryRequest), mib(cfg.MemoryLimit))
	}
	return cfg, nil
}

// ownerValue is the LabelOwner value: owner when it is set (and a valid
// label value), else a hash of the host name and the state directory.
func ownerValue(owner, stateDir string) (string, error) {
	if owner == "" {
		return ownerID(stateDir), nil
	}
	if errs := validation.IsValidLabelValue(owner); len(errs) > 0 {
		return "", testdbd.Errorf(testdbd.EInvalid, "kubernetes provider: owner %q is not a valid label value: %s",
			owner, strings.Join(errs, "; "))
	}
	return owner, nil
}

// connect makes the provider's API client for the cluster and namespace
// its configuration names, and checks that the daemon may do there what it
// needs to.
func (p *Provider) connect(ctx context.Context) error {
	rc, ns, err := loadConfig(p.cfg.Kubeconfig)
	if err != nil {
		return err
	}
	if p.cfg.Namespace != "" {
		ns = p.cfg.Namespace
	}
	p.ns, p.host = ns, rc.Host
	rc.QPS, rc.Burst = 50, 100 // client-go's default (5 a second) would pace a start's calls
	if p.api, err = newAPI(rc, ns); err != nil {
		return fmt.Errorf("kubernetes provider: %w", err)
	}
	return p.check(ctx)
}

// loadConfig reads the client configuration: the kubeconfig at path (or
// $KUBECONFIG, ~/.kube/config), else the in-cluster one. It returns the
// namespace the configuration names.
func loadConfig(path string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", testdbd.Errorf(testdbd.EInvalid,
				"kubernetes provider: no cluster configuration: pass --kubeconfig or set KUBECONFIG, or run the daemon in a pod with a service account")
		}
		return nil, "", testdbd.Errorf(testdbd.EInvalid, "kubernetes provider: read the cluster configuration: %v", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return rc, ns, nil
}

// check asks the cluster whether it answers and whether this client may do
// what the provider does in the namespace, and says what is missing.
func (p *Provider) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := p.api.listPods(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsUnauthorized(err) {
		return testdbd.Errorf(testdbd.EUnavailable,
			"kubernetes provider: the cluster at %s refused the credentials (%v): check --kubeconfig or the service account's token", p.host, err)
	}
	if err != nil && !apierrors.IsForbidden(err) {
		return testdbd.Errorf(testdbd.EUnavailable,
			"kubernetes provider: the cluster at %s does not answer (%v): start it (make k8s-up for the local one) or check --kubeconfig",
			p.host, err)
	}
	type need struct{ verb, resource, sub string }
	needs := []need{
		{"create", "pods", ""}, {"delete", "pods", ""}, {"get", "pods", ""}, {"list", "pods", ""},
		{"watch", "pods", ""}, {"get", "pods", "log"},
	}
	if p.cfg.Service {
		needs = append(needs, need{"create", "services", ""}, need{"delete", "services", ""}, need{"list", "services", ""})
	}
	var missing []string
	for _, n := range needs {
		r, err := p.api.accessReview(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: p.ns, Verb: n.verb, Resource: n.resource, Subresource: n.sub,
			}},
		})
		if err != nil {
			return fmt.Errorf("kubernetes provider: check permissions: %w", err)
		}
		if !r.Status.Allowed {
			res := n.resource
			if n.sub != "" {
				res += "/" + n.sub
			}
			missing = append(missing, n.verb+" "+res)
		}
	}
	if len(missing) > 0 {
		return testdbd.Errorf(testdbd.EUnavailable,
			"kubernetes provider: not allowed to %s in namespace %s: bind the daemon's account to a Role that allows it (deploy/kubernetes/rbac.yaml)",
			strings.Join(missing, ", "), p.ns)
	}
	return nil
}

// Name returns "kubernetes".
func (p *Provider) Name() string { return "kubernetes" }

// Engine returns the flavor and version of the image's server.
func (p *Provider) Engine() testdbd.Engine { return p.engine }

// Image returns the image the provider runs.
func (p *Provider) Image() string { return p.cfg.Image }

// Owner returns the value of LabelOwner on this provider's pods.
func (p *Provider) Owner() string { return p.owner }

// Namespace returns the namespace of the provider's pods.
func (p *Provider) Namespace() string { return p.ns }

// Close stops every server the provider started, deletes any other pod and
// Service with its owner label, stops watching and releases the state
// directory.
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
	servers := make([]*Pod, 0, len(p.servers))
	for _, s := range p.servers {
		servers = append(servers, s)
	}
	lock := p.lock
	p.lock = nil
	p.mu.Unlock()

	errs := instance.StopAll(ctx, servers)
	// Pods of starts still in flight, or whose deletion failed above.
	errs = append(errs, p.sweep(ctx, "deleted a pod left at shutdown"))
	p.stopWatching()
	if lock != nil {
		errs = append(errs, lock.Close())
	}
	return errors.Join(errs...)
}

func (p *Provider) stopWatching() {
	if p.stopInformer != nil {
		p.stopInformer()
		p.stopInformer = nil
	}
	p.wg.Wait()
}

// SetLibraryLogger sends client-go's own messages (klog: watch errors,
// throttling) to l instead of stderr. It changes a process-wide setting of
// that library: call it once, from main.
func SetLibraryLogger(l *slog.Logger) {
	klog.SetSlogLogger(l.With("component", "client-go"))
}

// ownerID is the LabelOwner value of a state directory on this host.
func ownerID(stateDir string) string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + stateDir))
	return hex.EncodeToString(sum[:8])
}

// labels returns the labels of a pod or Service of this provider.
func (p *Provider) labels(instance, component string) map[string]string {
	return map[string]string{
		LabelOwner:                     p.owner,
		LabelInstance:                  instance,
		"app.kubernetes.io/name":       "testdbd",
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "testdbd",
	}
}

func (p *Provider) annotations() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{AnnotationStateDir: p.cfg.StateDir, AnnotationHost: host}
}

// ownerSelector selects this provider's objects.
func (p *Provider) ownerSelector() string { return LabelOwner + "=" + p.owner }

// sweep deletes every pod (at once, without a grace period: their data is
// disposable) and Service labelled with this provider's owner: at start
// those a killed daemon left, at Close whatever remains. Objects of other
// owners are never touched.
func (p *Provider) sweep(ctx context.Context, msg string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	pods, err := p.api.listPods(ctx, metav1.ListOptions{LabelSelector: p.ownerSelector()})
	if err != nil {
		return fmt.Errorf("kubernetes provider: list pods: %w", err)
	}
	var errs []error
	for _, pod := range pods.Items {
		err := p.deletePod(ctx, pod.Name, 0)
		if errors.Is(err, errPodGone) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.log.Info(msg, "pod", pod.Name, "instance", pod.Labels[LabelInstance], "phase", pod.Status.Phase)
	}
	if p.cfg.Service {
		svcs, err := p.api.listServices(ctx, metav1.ListOptions{LabelSelector: p.ownerSelector()})
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("kubernetes provider: list services: %w", err))...)
		}
		for _, svc := range svcs.Items {
			if err := p.deleteService(ctx, svc.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// deletePod deletes a pod with the given grace period in seconds; a pod
// already gone is not an error (errPodGone).
func (p *Provider) deletePod(ctx context.Context, name string, grace int64) error {
	err := p.api.deletePod(ctx, name, grace)
	if apierrors.IsNotFound(err) {
		return errPodGone
	}
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", p.ns, name, err)
	}
	return nil
}

// errPodGone is deletePod's answer for a pod that no longer exists.
var errPodGone = errors.New("the pod is gone")

func (p *Provider) deleteService(ctx context.Context, name string) error {
	err := p.api.deleteService(ctx, name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete service %s/%s: %w", p.ns, name, err)
	}
	return nil
}

// detectEngine runs the server's --version in a short-lived pod and parses
// the flavor and version. It also shows early that the nodes can run the
// image.
func (p *Provider) detectEngine(ctx context.Context) (testdbd.Engine, error) {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	small := resource.MustParse("64Mi")
	limit := resource.MustParse("256Mi")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "testdbd-version-" + random.Hex(4), Labels: p.labels("version", "engine-probe"),
			Annotations: p.annotations(),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			DNSPolicy:                     corev1.DNSDefault,
			TerminationGracePeriodSeconds: ptr(int64(0)),
			Containers: []corev1.Container{{
				Name: "version", Image: p.cfg.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sh", "-c", serverimage.VersionScript, "testdbd-version"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: small},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: limit},
				},
			}},
		},
	}
	created, err := p.api.createPod(ctx, pod)
	if err != nil {
		return testdbd.Engine{}, fmt.Errorf("kubernetes provider: create the engine probe pod: %w", err)
	}
	defer func() { _ = p.deletePod(context.WithoutCancel(ctx), created.Name, 0) }()
	t0 := time.Now()
	for {
		cur, err := p.api.getPod(ctx, created.Name)
		if err != nil {
			return testdbd.Engine{}, fmt.Errorf("kubernetes provider: run %s --version in image %s: %w", "mariadbd/mysqld", p.cfg.Image, err)
		}
		if problem := p.podProblem(cur, t0); problem != nil {
			return testdbd.Engine{}, problem
		}
		switch cur.Status.Phase {
		case corev1.PodSucceeded:
			out := p.logs(ctx, created.Name, 0)
			line := out
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, " Ver ") {
					line = l
					break
				}
			}
			e, err := testdbd.ParseEngine(line)
			if err != nil {
				return testdbd.Engine{}, fmt.Errorf("kubernetes provider: detect the engine of image %s: %w", p.cfg.Image, err)
			}
			return e, nil
		case corev1.PodFailed:
			return testdbd.Engine{}, testdbd.Errorf(testdbd.EInvalid,
				"kubernetes provider: image %s cannot run mariadbd or mysqld --version (%s, needs /bin/sh): %s",
				p.cfg.Image, terminated(cur, 0), lastLines(p.logs(ctx, created.Name, 0), 3))
		}
		select {
		case <-ctx.Done():
			return testdbd.Engine{}, testdbd.Errorf(testdbd.ETimeout,
				"kubernetes provider: the engine probe pod %s/%s did not finish within %v (phase %s): see kubectl describe pod",
				p.ns, created.Name, startupTimeout, cur.Status.Phase)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Container waiting reasons that do not go away by waiting.
var hopeless = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"PreCreateHookError": true, "PreStartHookError": true,
}

// unschedulablePatience is how long a pod may wait for a node with room:
// memory that a pod being deleted still holds (a dead server's, while its
// replacement starts) frees soon after.
const unschedulablePatience = 15 * time.Second

// podProblem says why a pod created at created will never run, or nil: an
// image the node cannot get, a container that cannot be created, or no
// node with room for longer than unschedulablePatience.
func (p *Provider) podProblem(pod *corev1.Pod, created time.Time) error {
	for _, c := range pod.Status.ContainerStatuses {
		w := c.State.Waiting
		if w == nil || !hopeless[w.Reason] {
			continue
		}
		if strings.Contains(w.Reason, "Image") {
			return testdbd.Errorf(testdbd.EUnavailable,
				"kubernetes provider: pod %s/%s cannot get image %s (%s: %s): load it into the nodes' container runtime "+
					"(make k8s-load-image IMAGE=%s for the local cluster) or push it to a registry the nodes pull from, and pass --image",
				p.ns, pod.Name, p.cfg.Image, w.Reason, w.Message, p.cfg.Image)
		}
		return testdbd.Errorf(testdbd.EUnavailable, "kubernetes provider: pod %s/%s cannot start its container (%s: %s)",
			p.ns, pod.Name, w.Reason, w.Message)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			time.Since(created) > unschedulablePatience {
			return testdbd.Errorf(testdbd.EExhausted,
				"kubernetes provider: no node can run pod %s/%s (%s): free memory on the nodes, or lower the memory each server asks for (--memory-budget / --max-instances)",
				p.ns, pod.Name, c.Message)
		}
	}
	return nil
}

// logs returns a pod's output: its last tail lines, or all of it for 0.
func (p *Provider) logs(ctx context.Context, pod string, tail int64) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	opts := &corev1.PodLogOptions{LimitBytes: ptr(int64(1 << 20))}
	if tail > 0 {
		opts.TailLines = &tail
	}
	b, err := p.api.podLogs(ctx, pod, opts)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "(no logs: the pod is gone)"
		}
		return fmt.Sprintf("(no logs: %v)", err)
	}
	return strings.TrimSpace(string(b))
}

// watchPods starts the informer that reports this provider's pods to their
// servers: every change (Ready, terminated, being deleted) and deletion.
func (p *Provider) watchPods(ctx context.Context) error {
	sel := p.ownerSelector()
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return p.api.listPods(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return p.api.watchPods(ctx, o)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.onPod,
		UpdateFunc: func(_, obj any) { p.onPod(obj) },
		DeleteFunc: p.onDelete,
	})
	if err != nil {
		return fmt.Errorf("kubernetes provider: watch pods: %w", err)
	}
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stopInformer = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		inf.RunWithContext(ictx)
	}()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		p.stopWatching()
		return testdbd.Errorf(testdbd.EUnavailable, "kubernetes provider: could not list and watch pods in namespace %s", p.ns)
	}
	return nil
}

func (p *Provider) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if s := p.server(pod.Name); s != nil {
		s.observe(pod)
	}
}

func (p *Provider) onDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if s := p.server(pod.Name); s != nil {
		s.deleted(pod)
	}
}

func (p *Provider) server(pod string) *Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[pod]
}

func (p *Provider) forget(pod string) {
	p.mu.Lock()
	delete(p.servers, pod)
	p.mu.Unlock()
}

// lastLines returns the last n lines of s joined with " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// mib formats a byte count as a Kubernetes quantity in MiB, e.g. 2048Mi.
func mib(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

func ptr[T any](v T) *T { return &v }
