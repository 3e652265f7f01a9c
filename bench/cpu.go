package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// cpuMs returns the CPU time, user and system, that process pid and its
// threads (live and ended) have used so far, in milliseconds; 0 for pid 0
// or a process that cannot be read. The kernel keeps it exactly and prints
// it in 10 ms ticks, so a difference of two readings is exact to a tick:
// a mean over many short windows is exact, one window is not.
func cpuMs(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	stat := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis (field 3, the state, comes first).
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) * 1000 / clockTicks
}

// selfCPUMs is the benchmark process's own CPU time so far, in ms.
func selfCPUMs() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// procs are the processes that do a variant's work besides the benchmark:
// the database server and, for testdbd's variants, the daemon.
type procs struct{ server, daemon int }

// cpu reads both processes' CPU time so far.
func (p procs) cpu() (server, daemon float64) { return cpuMs(p.server), cpuMs(p.daemon) }

// cpuMark is the CPU time so far of a variant's processes and of the
// benchmark itself.
type cpuMark struct {
	p                     procs
	server, daemon, bench float64
}

// mark reads the CPU time so far of p's processes and the benchmark's.
func (p procs) mark() cpuMark {
	server, daemon := p.cpu()
	return cpuMark{p: p, server: server, daemon: daemon, bench: selfCPUMs()}
}

// used is the CPU time, in ms, the processes have used since the mark.
func (m cpuMark) used() (server, daemon, bench float64) {
	now := m.p.mark()
	return round3(now.server - m.server), round3(now.daemon - m.daemon), round3(now.bench - m.bench)
}

// mean is the arithmetic mean of xs (NaN for none).
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// resetCPU is the mean CPU time, in ms, of a variant's timed samples: the
// server's during the reset, the daemon's during the reset, and the
// server's during the test before it. NaN where no sample measured it
// (results of a run before CPU was read).
func resetCPU(samples []ResetSample, v string) (server, daemon, test float64) {
	var any bool
	for _, s := range samples {
		if s.Variant == v && !s.Warmup && s.ServerCPUMs+s.TestCPUMs+s.DaemonCPUMs > 0 {
			any = true
		}
	}
	if !any {
		return math.NaN(), math.NaN(), math.NaN()
	}
	return mean(resetField(samples, v, func(s ResetSample) float64 { return s.ServerCPUMs })),
		mean(resetField(samples, v, func(s ResetSample) float64 { return s.DaemonCPUMs })),
		mean(resetField(samples, v, func(s ResetSample) float64 { return s.TestCPUMs }))
}

// renderResetCPU is the CPU time the resets of the reset-latency phase
// cost, against their floor's.
func renderResetCPU(w *strings.Builder, r *Results) {
	if s, _, _ := resetCPU(r.Resets, vSnapshot); math.IsNaN(s) {
		return
	}
	fmt.Fprintf(w, "CPU time per reset, in ms, the mean over the timed samples: the database server's and the daemon's "+
		"(`/proc/<pid>/stat` before and after each reset; the kernel counts exactly and prints 10 ms ticks, so a mean over "+
		"%d samples is exact to about a tick over their count), and the server's during the test before it. Client and server "+
		"share the machine's %d cores: a reset's CPU time is what any other lease's reset or test waits for.\n\n",
		r.Plan.Batches*r.Plan.PerBatch, r.Machine.Cores)
	fmt.Fprintf(w, "| variant | server, reset | daemon, reset | server + daemon over the floor's server | server, test |\n|---|---|---|---|---|\n")
	for _, v := range variantOrder {
		if strings.HasSuffix(v, essentialsSuffix) {
			continue // their CPU time counts both reads, their latency one
		}
		server, daemon, test := resetCPU(r.Resets, v)
		if math.IsNaN(server) {
			continue
		}
		over, d := "–", "–"
		if f, ok := floorOf[v]; ok {
			fs, _, _ := resetCPU(r.Resets, f)
			over = fmtX((server + daemon) / fs)
		}
		if strings.HasPrefix(v, "testdbd") {
			d = fmtMs(daemon)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", v, fmtMs(server), d, over, fmtMs(test))
	}
	fmt.Fprintf(w, "\n")
}

// cleanCPU is the CPU time, in ms, per clean database of a strategy's
// throughput runs (server, daemon, the benchmark's workers), and what the
// floor would need for one: the server's CPU time for the standard test
// and the floor's restore (the reset-latency phase's means). NaN where not
// measured.
func cleanCPU(r *Results, strategy string) (server, daemon, bench, floor float64) {
	var loops int
	for _, t := range r.Throughput {
		if t.Strategy == strategy && t.Loops > 0 {
			loops += t.Loops
			server, daemon, bench = server+t.ServerCPUMs, daemon+t.DaemonCPUMs, bench+t.BenchCPUMs
		}
	}
	if loops == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	n := float64(loops)
	floor = math.NaN()
	if f, ok := floorOf[strategy]; ok {
		fs, _, ft := resetCPU(r.Resets, f)
		floor = fs + ft
	}
	return server / n, daemon / n, bench / n, floor
}

// cpuCeiling is how many clean databases per second the machine's cores
// could give at ms of CPU time each.
func cpuCeiling(r *Results, ms float64) float64 { return float64(r.Machine.Cores) * 1000 / ms }

// renderCleanCPU is the throughput runs' CPU time per clean database, and
// the rate the machine's cores allow at that cost and at the floor's.
func renderCleanCPU(w *strings.Builder, r *Results) {
	if s, _, _, _ := cleanCPU(r, vSnapshot); math.IsNaN(s) {
		return
	}
	fmt.Fprintf(w, "CPU time per clean database, in ms: every process of the loop from the start of the runs until the daemon had "+
		"recycled every database released in them (server, daemon, and the benchmark's workers: REST calls, connecting, the "+
		"test), over the loops completed. \"at most\" is the machine's %d cores over that cost: the rate if nothing else ran and "+
		"nothing waited (a run can hand out more for a while: the pool's ready databases are a head start, whose recycling the "+
		"cost includes). The floor is the server's CPU time for the standard test and the floor's restore alone (the reset "+
		"latency phase's means): no daemon, no REST, no connecting, no worker. For the least loops, \"daemon\" is its answering "+
		"`GET /healthz`, and \"workers\" includes the recycle's client.\n\n", r.Machine.Cores)
	fmt.Fprintf(w, "| strategy | server | daemon | workers | total | at most, per second | floor: server, test + restore | floor: at most, per second |\n|---|---|---|---|---|---|---|---|\n")
	for _, v := range throughputVariants(r) {
		server, daemon, bench, floor := cleanCPU(r, v)
		total := server + daemon + bench
		floorMs, floorRate := "—", "—"
		if !math.IsNaN(floor) {
			floorMs, floorRate = fmtMs(floor), fmtRate(cpuCeiling(r, floor))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v, fmtMs(server), fmtMs(daemon), fmtMs(bench), fmtMs(total),
			fmtRate(cpuCeiling(r, total)), floorMs, floorRate)
	}
	fmt.Fprintf(w, "\n")
}

// cpuNote says, for the throughput bar, what the cores allow at the
// measured CPU time per clean database and at the floor's.
func cpuNote(r *Results, strategy string) string {
	server, daemon, bench, floor := cleanCPU(r, strategy)
	if math.IsNaN(server) {
		return ""
	}
	total := server + daemon + bench
	return fmt.Sprintf("; %s ms CPU per clean database, at most %s/s on %d cores (floor: %s ms, at most %s/s)",
		fmtMs(total), fmtRate(cpuCeiling(r, total)), r.Machine.Cores, fmtMs(floor), fmtRate(cpuCeiling(r, floor)))
}
