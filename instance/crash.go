package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// KeptCrashLogs is how many error logs of dead servers a state directory
// keeps under crashes/; older ones are removed.
const KeptCrashLogs = 20

// MaxCrashLogBytes bounds one kept log: a longer one keeps its end.
const MaxCrashLogBytes = 4 << 20

// KeepCrashLog writes the error log of a server that died to
// <stateDir>/crashes/<id>-<UTC time>.log (private to the daemon's user),
// removes the oldest kept logs beyond KeptCrashLogs, and returns the path.
func KeepCrashLog(stateDir, id string, log []byte) (string, error) {
	dir := filepath.Join(stateDir, "crashes")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("keep the error log: %w", err)
	}
	if len(log) > MaxCrashLogBytes {
		log = append([]byte("(beginning cut)\n"), log[len(log)-MaxCrashLogBytes:]...)
	}
	path := filepath.Join(dir, id+"-"+time.Now().UTC().Format("20060102T150405.000Z")+".log")
	if err := os.WriteFile(path, log, 0o600); err != nil {
		return "", fmt.Errorf("keep the error log: %w", err)
	}
	pruneCrashLogs(dir, KeptCrashLogs)
	return path, nil
}

// pruneCrashLogs removes the oldest .log files in dir beyond keep.
func pruneCrashLogs(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), fi.ModTime()})
		}
	}
	if len(files) <= keep {
		return
	}
	sort.Slice(files, func(i, j int) bool {
		if !files[i].mod.Equal(files[j].mod) {
			return files[i].mod.Before(files[j].mod)
		}
		return files[i].name < files[j].name
	})
	for _, f := range files[:len(files)-keep] {
		_ = os.Remove(filepath.Join(dir, f.name))
	}
}

// explainLine matches the error-log lines that say why a server stopped:
// errors (MariaDB "[ERROR]", MySQL "[ERROR] [MY-…]"), fatal signals and
// failed assertions, and the server's own "Aborting".
var explainLine = regexp.MustCompile(`(?i)\[(ERROR|FATAL)\]|got signal \d+|assertion|aborting|terminate called|out of memory|cannot allocate`)

// Explain picks from a server's error log the lines that say why it stopped:
// the last error, fatal-signal and abort lines (at most 8), then the log's
// last 2 lines if they are not among them, joined with " | " and at most
// about 2,000 characters long.
func Explain(log string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(log, "\r", "")), "\n")
	var picked []int
	for i, l := range lines {
		if explainLine.MatchString(l) {
			picked = append(picked, i)
		}
	}
	if len(picked) > 8 {
		picked = picked[len(picked)-8:]
	}
	for i := max(len(lines)-2, 0); i < len(lines); i++ {
		if len(picked) == 0 || picked[len(picked)-1] < i {
			picked = append(picked, i)
		}
	}
	var out []string
	prev := -1
	for _, i := range picked {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if prev >= 0 && i > prev+1 {
			out = append(out, "…")
		}
		out = append(out, l)
		prev = i
	}
	s := strings.Join(out, " | ")
	if len(s) > 2000 {
		s = "…" + strings.ToValidUTF8(s[len(s)-2000:], "")
	}
	if s == "" {
		return "(the error log is empty)"
	}
	return s
}
