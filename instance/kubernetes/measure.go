package kubernetes

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/testdbd/testdbd/instance"
)

// usage is what Info reads of a server pod on this host.
type usage struct {
	pid            int   // the server's pid in the host's pid namespace
	memory         int64 // the pod's memory, its tmpfs pages included
	datadir        int64 // bytes used on the datadir volume
	datadirSeen    bool  // the datadir was looked at through /proc
	datadirOnTmpfs bool
}

// measure reads a pod's memory from its cgroup and its datadir's use from
// the server's mount namespace, when the pod runs on this host and the
// daemon may look (as root, with the host's /sys/fs/cgroup and /proc: the
// daemon runs on the node, as with the local cluster). Elsewhere it
// returns zeros: the Kubernetes API has no memory figures without a
// metrics server, and the pods' memory limits bound what they take.
func (s *Pod) measure(pod *corev1.Pod) usage {
	var u usage
	dir := s.podCgroup(pod)
	if dir == "" {
		return u
	}
	u.memory = cgroupMemory(dir)
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name != containerName || c.ContainerID == "" {
			continue
		}
		_, id, ok := strings.Cut(c.ContainerID, "://") // containerd://<id>
		if ok {
			u.pid = firstPID(dir, id)
		}
	}
	u.datadir, u.datadirOnTmpfs, u.datadirSeen = instance.ContainerDatadir(u.pid, Datadir)
	return u
}

// podCgroup finds the pod's memory cgroup directory (cgroup v1 or v2, the
// kubelet's cgroupfs or systemd driver), remembering it once found.
func (s *Pod) podCgroup(pod *corev1.Pod) string {
	s.mu.Lock()
	dir := s.cgroup
	s.mu.Unlock()
	if dir != "" || pod.UID == "" {
		return dir
	}
	uid := string(pod.UID)
	under := strings.ReplaceAll(uid, "-", "_")
	// The kubelet's pods are under kubepods at the top of the hierarchy or,
	// with a cgroup root of its own (--cgroup-root), one level down.
	var patterns []string
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		for _, top := range []string{root, root + "/*"} {
			patterns = append(patterns,
				top+"/kubepods/pod"+uid,
				top+"/kubepods/*/pod"+uid,
				top+"/kubepods.slice/kubepods-pod"+under+".slice",
				top+"/kubepods.slice/*/kubepods-*-pod"+under+".slice")
		}
	}
	for _, pattern := range patterns {
		if m, _ := filepath.Glob(pattern); len(m) == 1 {
			s.mu.Lock()
			s.cgroup = m[0]
			s.mu.Unlock()
			return m[0]
		}
	}
	return ""
}

// cgroupMemory is the memory a cgroup holds as `docker stats` and the
// kubelet's working set count it: its usage less inactive page cache
// (tmpfs pages are not page cache of a file on disk, and stay counted).
func cgroupMemory(dir string) int64 {
	usage := readInt(filepath.Join(dir, "memory.usage_in_bytes")) // v1
	inactive := "total_inactive_file"
	if usage == 0 {
		usage, inactive = readInt(filepath.Join(dir, "memory.current")), "inactive_file" // v2
	}
	f, err := os.Open(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return usage
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == inactive {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n < usage {
				usage -= n
			}
			break
		}
	}
	return usage
}

// firstPID returns the first process of the container's cgroup under the
// pod's (named after the container id by either cgroup driver), or 0.
func firstPID(podDir, containerID string) int {
	m, _ := filepath.Glob(filepath.Join(podDir, "*"+containerID+"*", "cgroup.procs"))
	if len(m) == 0 {
		return 0
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
