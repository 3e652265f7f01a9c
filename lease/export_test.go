package lease

// Builds returns how many template builds were started.
func (m *Manager) Builds() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.builds
}
