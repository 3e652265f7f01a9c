package kubernetes

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
