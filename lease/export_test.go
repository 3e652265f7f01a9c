package lease

// Builds returns how many template builds were started.
func (m *Manager) Builds() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.builds
}

// FailClones makes creating worker databases fail with the error fail
// returns (nil restores it), to test how templates heal and back off.
func FailClones(fail func(database string) error) {
	if fail == nil {
		cloneHook.Store(nil)
		return
	}
	cloneHook.Store(&fail)
}

// SetSpaceReserve changes the free space kept on every server
// (Config.SpaceReserve), to test the reserve against a server's actual
// free space.
func (m *Manager) SetSpaceReserve(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.SpaceReserve = n
}
