package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// readMachine describes the machine from /proc.
func readMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseInt(strings.Fields(procField("/proc/meminfo", "MemTotal") + " 0")[0], 10, 64); err == nil {
		m.MemoryBytes = kb << 10
	}
	m.Kernel = strings.TrimSpace(readFile("/proc/sys/kernel/osrelease"))
	m.OS = strings.Trim(procField("/etc/os-release", "PRETTY_NAME"), `"`)
	m.LoadStart = loadAvg()
	return m
}

// procField returns the value of the first "key: value" or "key=value"
// line of a file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key) {
			continue
		}
		rest := strings.TrimLeft(line[len(key):], " \t")
		if strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "=") {
			return strings.TrimSpace(rest[1:])
		}
	}
	return ""
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// loadAvg is the 1, 5 and 15 minute load averages.
func loadAvg() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// serverPIDs lists the running mariadbd and mysqld processes.
func serverPIDs() map[int]bool {
	pids := map[int]bool{}
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		name := strings.TrimSpace(readFile(c))
		if name != "mariadbd" && name != "mysqld" {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(c))); err == nil {
			pids[pid] = true
		}
	}
	return pids
}

// fsyncCost returns the median time of n 16 KiB writes each followed by
// fsync in a file under dir: what one InnoDB page flush costs there.
func fsyncCost(dir string, n int) (float64, error) {
	f, err := os.CreateTemp(dir, "tdbb-fsync-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 16<<10)
	var samples []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i)*int64(len(buf))); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		samples = append(samples, ms(time.Since(start)))
	}
	sort.Float64s(samples)
	return round3(samples[len(samples)/2]), nil
}
