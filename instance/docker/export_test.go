package docker

// Abandon releases the state directory and stops watching the containers
// without removing any, as a daemon killed with -9 would.
func (p *Provider) Abandon() {
	p.mu.Lock()
	p.closed = true
	p.servers = map[string]*Container{}
	lock := p.lock
	p.lock = nil
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	_ = p.cli.Close()
	if lock != nil {
		_ = lock.Close()
	}
}
