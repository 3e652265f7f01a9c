package lease

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Estimates for the memory budget before anything is measured.
const (
	instanceEstimate = 150 << 20 // memory a new server needs before it holds data
	tableEstimate    = 128 << 10 // tmpfs bytes of one small InnoDB table
)

// memory is the last measurement of what the servers use.
type memory struct {
	mu   sync.Mutex
	at   time.Time
	used int64
}

// measureMemory returns the servers' footprint (resident memory plus tmpfs
// data), measured at most once a second. It inspects containers, so it is
// called without m.mu.
func (m *Manager) measureMemory() int64 {
	m.mem.mu.Lock()
	if time.Since(m.mem.at) < time.Second {
		used := m.mem.used
		m.mem.mu.Unlock()
		return used
	}
	m.mem.mu.Unlock()
	var used int64
	for _, s := range m.members() {
		used += s.Info(context.Background()).FootprintBytes
	}
	m.mem.mu.Lock()
	m.mem.used, m.mem.at = used, time.Now()
	m.mem.mu.Unlock()
	return used
}

// memoryBlocks says why adding need bytes would break the memory budget, or
// "". It measures when the last measurement is older than a second, so it
// must be called without m.mu.
func (m *Manager) memoryBlocks(need int64) string {
	if m.cfg.MemoryBudget <= 0 {
		return ""
	}
	return m.budgetExceeded(m.measureMemory(), need)
}

// memoryBlocksLocked is memoryBlocks with m.mu held: it uses the last
// measurement as it is.
func (m *Manager) memoryBlocksLocked(need int64) string {
	if m.cfg.MemoryBudget <= 0 {
		return ""
	}
	m.mem.mu.Lock()
	used := m.mem.used
	m.mem.mu.Unlock()
	return m.budgetExceeded(used, need)
}

// budgetExceeded says why used+need bytes break the memory budget, or "".
func (m *Manager) budgetExceeded(used, need int64) string {
	if used+need <= m.cfg.MemoryBudget {
		return ""
	}
	return fmt.Sprintf("--memory-budget=%dM would be exceeded (servers use %dM, %dM more needed)",
		m.cfg.MemoryBudget>>20, used>>20, need>>20)
}
