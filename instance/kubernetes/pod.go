package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/instance/serverimage"
	"github.com/testdbd/testdbd/instance/tlsca"
	"github.com/testdbd/testdbd/internal/random"
)

// Datadir is the server's datadir inside its pod, a memory-backed emptyDir
// volume, as is its tmpdir.
const Datadir = serverimage.Datadir

// containerName is the server's container in its pod.
const containerName = "server"

// Pod is one server pod. It is safe for concurrent use.
type Pod struct {
	p        *Provider
	id       string
	name     string // the pod's (and Service's) name
	password string
	started  time.Time
	startup  time.Duration
	life     *instance.Lifecycle
	tls      *tlsca.Server // its TLS certificate; nil without a Service

	changed chan struct{} // a new pod state arrived (capacity 1)
	gone    chan struct{} // closed when the pod object is deleted
	goneOne sync.Once

	mu         sync.Mutex
	pod        *corev1.Pod // the latest state seen
	uid        types.UID
	podIP      string
	clientHost string // the pod IP, or the Service's DNS name
	onMemory   bool   // the datadir is a memory-backed emptyDir, as the pod's spec says
	dying      bool
	cgroup     string // the pod's memory cgroup on this host, once found
}

var _ testdbd.Instance = (*Pod)(nil)

// Start runs a server pod with its datadir on a memory-backed emptyDir and
// waits until testdbd's admin account can log in over TCP on the pod's IP
// and the pod is Ready.
func (p *Provider) Start(ctx context.Context, opts testdbd.StartOptions) (testdbd.Instance, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, testdbd.Errorf(testdbd.EUnavailable, "kubernetes provider is closed")
	}
	s, err := p.launch(ctx, "k-"+random.Hex(4), opts)
	if err != nil {
		return nil, fmt.Errorf("start %s server pod: %w", p.engine.Flavor, err)
	}
	p.log.Info("server started", "instance", s.id, "engine", p.engine.String(), "image", p.cfg.Image,
		"pod", p.ns+"/"+s.name, "ip", s.podIP, "client_host", s.clientHost,
		"startup", s.startup.Round(time.Millisecond))
	return s, nil
}

// launch creates one server pod (and its Service) and waits until it
// answers. On failure nothing of it remains.
func (p *Provider) launch(ctx context.Context, id string, opts testdbd.StartOptions) (_ *Pod, err error) {
	s := &Pod{
		p: p, id: id, name: "testdbd-" + id, password: random.Hex(16), life: instance.NewLifecycle(),
		changed: make(chan struct{}, 1), gone: make(chan struct{}),
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, testdbd.Errorf(testdbd.EUnavailable, "kubernetes provider closed while the server was starting")
	}
	p.servers[s.name] = s
	p.mu.Unlock()
	defer func() {
		if err != nil {
			_ = s.Stop(context.WithoutCancel(ctx))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	s.started = time.Now()
	if err := p.issueTLS(s, opts); err != nil {
		return nil, err
	}
	pod, err := p.api.createPod(ctx, p.podSpec(s, opts))
	if err != nil {
		s.markGone()
		return nil, fmt.Errorf("create pod %s/%s: %w", p.ns, s.name, err)
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed || s.life.Stopping() {
		// Close ran while the pod was being created; its sweep may have
		// listed the pods before this one existed.
		_ = p.deletePod(context.WithoutCancel(ctx), s.name, 0)
		return nil, testdbd.Errorf(testdbd.EUnavailable, "kubernetes provider closed while the server was starting")
	}
	s.mu.Lock()
	s.uid = pod.UID
	s.onMemory = memoryVolumeAt(pod, Datadir)
	s.mu.Unlock()
	if !s.onMemory {
		return nil, testdbd.Errorf(testdbd.EInternal, "pod %s/%s: its datadir %s is not a memory-backed volume (changed on admission?)",
			p.ns, s.name, Datadir)
	}
	if p.cfg.Service {
		if err := p.createService(ctx, s, pod); err != nil {
			return nil, err
		}
	}
	// The pod's IP, once it runs.
	if err := s.waitFor(ctx, "running with an IP", func(pod *corev1.Pod) bool {
		return pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
	}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.podIP = s.pod.Status.PodIP
	if s.clientHost == "" {
		s.clientHost = s.podIP
	}
	s.mu.Unlock()
	if err := instance.WaitReady(ctx, s.Admin(), s.life, func() string { return s.logTail(ctx) }); err != nil {
		return nil, err
	}
	// Ready: the readiness probe passed too, so that a Service routes to it.
	if err := s.waitFor(ctx, "Ready", podReady); err != nil {
		return nil, err
	}
	s.startup = time.Since(s.started)
	return s, nil
}

// issueTLS gives a server with a Service its TLS certificate, for the
// Service's names as a client in the cluster may write them and
// opts.TLSHosts. A server without one gets none: its pod's IP, which its
// leases carry, is known only once the pod runs.
func (p *Provider) issueTLS(s *Pod, opts testdbd.StartOptions) error {
	if !p.cfg.Service {
		return nil
	}
	svc := s.name + "." + p.ns
	var err error
	s.tls, err = p.ca.Issue(append([]string{svc + ".svc", svc + ".svc.cluster.local", svc, s.name}, opts.TLSHosts...)...)
	return err
}

// podSpec is a server's pod: one container running the start script as
// root (the server then drops to serverimage.ServerUser), its datadir and tmpdir on memory-backed emptyDir volumes of
// TmpfsBytes each, the memory request and limit of the configuration
// (the volumes' pages count against the limit), no service account token,
// and a TCP readiness probe.
func (p *Provider) podSpec(s *Pod, opts testdbd.StartOptions) *corev1.Pod {
	size := resource.NewQuantity(p.cfg.TmpfsBytes, resource.BinarySI)
	memory := func(v corev1.StorageMedium) corev1.VolumeSource {
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: v, SizeLimit: size}}
	}
	// "*": every address of the pod, IPv6 too where the pod has it (an
	// IPv6 or dual-stack cluster), IPv4 alone where not.
	args := serverimage.Args(p.engine, serverPort, "*", opts.Args)
	env := []corev1.EnvVar{{Name: "TESTDBD_INIT_SQL", Value: serverimage.InitSQL(p.engine.Flavor, s.password)}}
	if s.tls != nil {
		tlsEnv := serverimage.TLSEnv(s.tls.CertPEM, s.tls.KeyPEM, s.tls.CAPEM)
		for _, k := range []string{serverimage.TLSCertEnv, serverimage.TLSKeyEnv, serverimage.TLSCAEnv} {
			env = append(env, corev1.EnvVar{Name: k, Value: tlsEnv[k]})
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.name, Labels: p.labels(s.id, "server"), Annotations: p.annotations(),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			DNSPolicy:                     corev1.DNSDefault, // the server resolves no names (skip_name_resolve)
			TerminationGracePeriodSeconds: ptr(int64(2)),
			Containers: []corev1.Container{{
				Name: containerName, Image: p.cfg.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/bin/sh", "-c", serverimage.StartScript(p.engine, true), "testdbd-start"},
				Args:    args,
				Env:     env,
				Ports:   []corev1.ContainerPort{{Name: "mysql", ContainerPort: serverPort, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(serverPort)}},
					PeriodSeconds: 1, FailureThreshold: 3,
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(p.cfg.MemoryRequest, resource.BinarySI)},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(p.cfg.MemoryLimit, resource.BinarySI)},
				},
				// The start script needs root whatever user the image names.
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr(int64(0)), RunAsGroup: ptr(int64(0))},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: Datadir},
					{Name: "tmp", MountPath: serverimage.TmpDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: memory(corev1.StorageMediumMemory)},
				{Name: "tmp", VolumeSource: memory(corev1.StorageMediumMemory)},
			},
		},
	}
}

// createService creates the server's ClusterIP Service, owned by its pod
// (the garbage collector deletes it with the pod), and hands leases its
// DNS name.
func (p *Provider) createService(ctx context.Context, s *Pod, pod *corev1.Pod) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.name, Labels: p.labels(s.id, "server"), Annotations: p.annotations(),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelOwner: p.owner, LabelInstance: s.id},
			Ports: []corev1.ServicePort{{
				Name: "mysql", Port: serverPort, TargetPort: intstr.FromString("mysql"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	if _, err := p.api.createService(ctx, svc); err != nil {
		return fmt.Errorf("create service %s/%s: %w", p.ns, s.name, err)
	}
	s.mu.Lock()
	s.clientHost = s.name + "." + p.ns + ".svc"
	s.mu.Unlock()
	return nil
}

// waitFor waits until the pod's state satisfies ok, failing early when the
// pod cannot run or has exited, with what it was waiting for.
func (s *Pod) waitFor(ctx context.Context, what string, ok func(*corev1.Pod) bool) error {
	for {
		s.mu.Lock()
		pod := s.pod
		s.mu.Unlock()
		if pod != nil {
			if ok(pod) {
				return nil
			}
			if err := s.p.podProblem(pod, s.started); err != nil {
				return err
			}
		}
		select {
		case <-s.changed:
		case <-time.After(time.Second): // patience with an unschedulable pod runs out
		case <-s.life.Done():
			if err := s.life.Err(); err != nil {
				return fmt.Errorf("server exited during start-up: %w", err)
			}
			return testdbd.Errorf(testdbd.EUnavailable, "pod %s/%s went away during start-up", s.p.ns, s.name)
		case <-ctx.Done():
			phase := corev1.PodPhase("unknown")
			if pod != nil {
				phase = pod.Status.Phase
			}
			return testdbd.Errorf(testdbd.ETimeout, "pod %s/%s was not %s within %v (phase %s; see kubectl describe pod): %v",
				s.p.ns, s.name, what, startupTimeout, phase, ctx.Err())
		}
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// memoryVolumeAt reports whether the server container mounts a
// memory-backed emptyDir at path.
func memoryVolumeAt(pod *corev1.Pod, path string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name != containerName {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath != path {
				continue
			}
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
					return true
				}
			}
		}
	}
	return false
}

// observe records a new state of the pod from the watch, and notices when
// the server has exited or the pod is being deleted.
func (s *Pod) observe(pod *corev1.Pod) {
	s.mu.Lock()
	s.pod = pod
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	switch {
	case pod.DeletionTimestamp != nil:
		s.exited("is being deleted, not by testdbd")
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		s.exited(terminated(pod, s.p.cfg.MemoryLimit))
	default:
		for _, c := range pod.Status.ContainerStatuses {
			if c.Name == containerName && c.State.Terminated != nil {
				s.exited(terminated(pod, s.p.cfg.MemoryLimit))
			}
		}
	}
}

// deleted records that the pod object is gone.
func (s *Pod) deleted(pod *corev1.Pod) {
	s.mu.Lock()
	s.pod = pod
	s.mu.Unlock()
	s.exited("was deleted unexpectedly")
	s.markGone()
}

func (s *Pod) markGone() { s.goneOne.Do(func() { close(s.gone) }) }

// exited records, once, that the server has exited and, unless it was
// stopped on purpose, why: how, with the log lines about its death. The logs are read
// outside the watch's event handler.
func (s *Pod) exited(how string) {
	s.mu.Lock()
	dying := s.dying
	s.dying = true
	s.mu.Unlock()
	if dying {
		return
	}
	s.p.wg.Add(1)
	go func() {
		defer s.p.wg.Done()
		s.life.Exited(func() error {
			// Only the log lines about its death (instance.DeathLines): a
			// pod killed from outside (exit code 137) has none.
			said := instance.DeathLines(s.p.logs(context.Background(), s.name, 200))
			if said == "" {
				said = "nothing about its death"
			}
			return fmt.Errorf("server pod %s/%s %s; its log says: %s", s.p.ns, s.name, how, said)
		})
	}()
}

// probeNoise is how the server logs each connection of the TCP readiness
// probe (the kubelet connects and closes without a handshake).
const probeNoise = "closed normally without authentication"

// logTail returns the server's last five log lines that are not the
// readiness probe's.
func (s *Pod) logTail(ctx context.Context) string {
	var kept []string
	for _, l := range strings.Split(s.p.logs(ctx, s.name, 200), "\n") {
		if !strings.Contains(l, probeNoise) {
			kept = append(kept, l)
		}
	}
	return lastLines(strings.Join(kept, "\n"), 5)
}

// terminated describes how a pod's server container ended, e.g. "exited
// unexpectedly (container server: exit code 137, OOMKilled: ...)".
func terminated(pod *corev1.Pod, limit int64) string {
	for _, c := range pod.Status.ContainerStatuses {
		t := c.State.Terminated
		if t == nil {
			continue
		}
		d := fmt.Sprintf("exited unexpectedly (container %s: exit code %d", c.Name, t.ExitCode)
		if t.Signal != 0 {
			d += fmt.Sprintf(", signal %d", t.Signal)
		}
		if t.Reason != "" {
			d += ", " + t.Reason
		}
		if t.Reason == "OOMKilled" && limit > 0 {
			d += fmt.Sprintf(": the server and its memory-backed data went over the pod's memory limit of %s", mib(limit))
		}
		if t.Message != "" {
			d += ": " + strings.TrimSpace(t.Message)
		}
		return d + ")"
	}
	if pod.Status.Reason != "" {
		return fmt.Sprintf("failed unexpectedly (%s: %s)", pod.Status.Reason, pod.Status.Message)
	}
	return fmt.Sprintf("is %s unexpectedly", pod.Status.Phase)
}

// ID returns the instance id.
func (s *Pod) ID() string { return s.id }

// Engine returns the server's flavor and version.
func (s *Pod) Engine() testdbd.Engine { return s.p.engine }

// Admin returns the endpoint of testdbd's admin account: the pod's IP.
func (s *Pod) Admin() testdbd.Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return testdbd.Endpoint{Host: s.podIP, Port: serverPort, User: serverimage.AdminUser, Password: s.password}
}

// ClientAddr returns the address handed to leases: the pod's IP, or the
// DNS name of its Service when the provider makes one.
func (s *Pod) ClientAddr() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientHost, serverPort
}

// TLSCA returns the certificate of the authority that signed the server's
// TLS certificate, which covers its Service's names; nil without a
// Service: the pod's IP, which leases then carry, is known only once the
// pod runs, after its certificate had to be made.
func (s *Pod) TLSCA() []byte {
	if s.tls == nil {
		return nil
	}
	return s.tls.CAPEM
}

// PodName returns the server pod's namespace and name.
func (s *Pod) PodName() (namespace, name string) { return s.p.ns, s.name }

// Done is closed when the server has exited or its pod is gone.
func (s *Pod) Done() <-chan struct{} { return s.life.Done() }

// Err says why the server stopped unexpectedly; nil after Stop.
func (s *Pod) Err() error { return s.life.Err() }

// Info describes the server from the pod's last state seen by the watch;
// where the pod runs on this host and its cgroup and processes are
// visible (the daemon runs on the node, as root), memory and datadir use
// are read from there now.
func (s *Pod) Info(context.Context) testdbd.InstanceInfo {
	host, port := s.ClientAddr()
	s.mu.Lock()
	pod, onMemory := s.pod, s.onMemory
	s.mu.Unlock()
	info := testdbd.InstanceInfo{
		ID: s.id, Provider: "kubernetes", Engine: s.p.engine,
		Host: host, Port: port,
		Datadir: Datadir, DatadirOnTmpfs: onMemory,
		Image: s.p.cfg.Image, ContainerID: s.p.ns + "/" + s.name,
		StartedAt: s.started, StartupTime: s.startup,
	}
	if info.State, info.Err = s.life.State(); info.State != testdbd.InstanceRunning || pod == nil {
		return info
	}
	m := s.measure(pod)
	info.PID, info.MemoryBytes, info.DatadirBytes = m.pid, m.memory, m.datadir
	if m.datadirSeen {
		info.DatadirOnTmpfs = m.datadirOnTmpfs
	}
	info.FootprintBytes = info.MemoryBytes // the pod's memory counts its tmpfs pages
	return info
}

// Stop deletes the pod (and its Service) and waits until the pod object
// is gone, which the kubelet confirms once the containers have stopped.
// It is safe to call more than once.
func (s *Pod) Stop(ctx context.Context) error {
	return s.life.Stop(func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		var errs []error
		// One second for the server to go: its data is disposable.
		derr := s.p.deletePod(ctx, s.name, 1)
		if errors.Is(derr, errPodGone) {
			s.markGone()
		} else {
			errs = append(errs, derr)
		}
		if s.p.cfg.Service {
			errs = append(errs, s.p.deleteService(ctx, s.name))
		}
		err := errors.Join(errs...)
		if err == nil {
			select {
			case <-s.gone:
			case <-ctx.Done():
				// The watch missed it, or the kubelet is slow: ask.
				if _, gerr := s.p.api.getPod(context.Background(), s.name); gerr == nil {
					err = fmt.Errorf("stop instance %s: pod %s/%s still terminating after %v", s.id, s.p.ns, s.name, stopTimeout)
				}
			}
		}
		s.life.Exited(func() error { return nil })
		s.p.forget(s.name)
		s.p.log.Info("server stopped", "instance", s.id, "pod", s.p.ns+"/"+s.name)
		return err
	})
}
