package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/instance/tlsca"
)

// SpecWithTLS makes the pod spec of a server named name in namespace ns,
// with a Service or not, its certificate issued by ca, without a cluster.
func SpecWithTLS(ca *tlsca.Authority, service bool, ns, name string) (*Pod, *corev1.Pod, error) {
	p := &Provider{cfg: Config{Service: service, TmpfsBytes: 1 << 20, MemoryLimit: 1 << 20, MemoryRequest: 1 << 20},
		ns: ns, ca: ca, engine: testdbd.Engine{Flavor: testdbd.MariaDB, Version: "10.11.19"}}
	s := &Pod{p: p, id: name, name: name, password: "x"}
	if err := p.issueTLS(s, testdbd.StartOptions{}); err != nil {
		return nil, nil, err
	}
	return s, p.podSpec(s, testdbd.StartOptions{}), nil
}

// Abandon releases the state directory and stops watching the pods without
// deleting any, as a daemon killed with -9 would.
func (p *Provider) Abandon() {
	p.mu.Lock()
	p.closed = true
	p.servers = map[string]*Pod{}
	lock := p.lock
	p.lock = nil
	p.mu.Unlock()
	p.stopWatching()
	if lock != nil {
		_ = lock.Close()
	}
}
