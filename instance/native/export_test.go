//go:build linux

package native

// Abandon releases the state directory without stopping any server, as a
// daemon killed with -9 would.
func (p *Provider) Abandon() {
	p.mu.Lock()
	p.closed = true
	p.servers = map[string]*Process{}
	lock := p.lock
	p.lock = nil
	p.mu.Unlock()
	lock.Close()
}
