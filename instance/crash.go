package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
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
	return pick(logLines(log), explainLine.MatchString, 2)
}

// pick returns the last lines (at most 8) that keep accepts, then the last
// tail lines if they are not among them, joined with " | " ("…" marks lines
// left out between them) and at most about 2,000 characters long.
func pick(lines []string, keep func(string) bool, tail int) string {
	var picked []int
	for i, l := range lines {
		if keep(l) {
			picked = append(picked, i)
		}
	}
	if len(picked) > 8 {
		picked = picked[len(picked)-8:]
	}
	for i := max(len(lines)-tail, 0); i < len(lines); i++ {
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

// Exit is how a server's process or container ended.
type Exit struct {
	// Signal is the signal that killed the process (0: none, or not known).
	Signal syscall.Signal
	// Status is the exit status when the process exited on its own; for a
	// container, 128+n is taken to mean signal n (the engine's convention).
	Status int
	// OOMKilled: the container engine says the kernel's out-of-memory
	// killer ended it.
	OOMKilled bool
}

// ExitOf returns how the process that cmd.Wait reported on ended.
func ExitOf(state *os.ProcessState) Exit {
	if state == nil {
		return Exit{Status: -1}
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Signal: ws.Signal()}
	}
	return Exit{Status: state.ExitCode()}
}

// ContainerExit returns how a container whose main process had this exit
// status ended (a status of 128+n meaning signal n).
func ContainerExit(status int, oomKilled bool) Exit {
	e := Exit{Status: status, OOMKilled: oomKilled}
	if status > 128 && status < 128+65 {
		e.Signal = syscall.Signal(status - 128)
	}
	return e
}

// String says how the server ended, e.g. "was killed by signal 9
// (SIGKILL)" or "exited with status 1".
func (e Exit) String() string {
	var s string
	switch {
	case e.Signal != 0 && e.Status != 0:
		s = fmt.Sprintf("exited with status %d (128+%d: killed by signal %d, %s)", e.Status, int(e.Signal), int(e.Signal), signalName(e.Signal))
	case e.Signal != 0:
		s = fmt.Sprintf("was killed by signal %d (%s)", int(e.Signal), signalName(e.Signal))
	default:
		s = fmt.Sprintf("exited with status %d", e.Status)
	}
	if e.OOMKilled {
		s += ", by the kernel's out-of-memory killer (the container's memory limit, or the machine's memory, ran out)"
	}
	return s
}

// signalNames are the names of the signals that end servers.
var signalNames = map[syscall.Signal]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}

func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return sig.String()
}

// DeathCause says why a server stopped: how it ended (e) and what its
// error log says about that. A server killed by SIGKILL cannot log its
// death, so then nothing of the log is quoted; otherwise only the lines
// about the death are (DeathLines), never whatever happened to be last.
// A server that never became ready is explained by its start-up errors
// (Explain).
func DeathCause(e Exit, log string) string {
	lines := logLines(log)
	started := lastReady(lines)
	switch {
	case started < 0:
		return e.String() + " before it was ready; its log says: " + Explain(log)
	case e.Signal == syscall.SIGKILL && !e.OOMKilled:
		return e.String() + ", which a server can neither catch nor log: something outside it killed it (a kill -9 by a user or a test, or the kernel's out-of-memory killer: see dmesg)"
	case e.Signal == syscall.SIGKILL:
		return e.String()
	}
	if said := DeathLines(log); said != "" {
		return e.String() + "; its error log says: " + said
	}
	return e.String() + "; its error log says nothing about it"
}

// headerError matches a line the server logged with severity ERROR or
// FATAL: a header of digits and punctuation (the time, a thread id), then
// the severity. Text a client can put into the log (a user name, say)
// never comes first on its line.
var headerError = regexp.MustCompile(`^[0-9TZ:.\- ]+\[(ERROR|FATAL)\]`)

// deathMarker matches the lines with which a server reports its own end:
// a fatal signal (MariaDB "[ERROR] mysqld got signal 11 ;", MySQL "… UTC -
// mysqld got signal 11 ;"), a failed assertion, an abort, running out of
// memory. The words must follow the line's header (and the subsystem, as
// in "InnoDB: "), where no text of a client's can come.
var deathMarker = regexp.MustCompile(`^([0-9TZ:.\- ]+(\[ERROR\] |UTC - )\S*(mysqld|mariadbd)\S* got signal \d+|` +
	`[0-9TZ:.\- ]+\[(ERROR|FATAL)\] (\[FATAL\] )?(\[MY-\d+\] \[\w+\] )?(\S+: )?(Aborting|[Oo]ut of memory|[Cc]annot allocate|[Ff]atal)|` +
	`[^\[]*[Aa]ssertion .* failed|terminate called)`)

// DeathLines returns the lines of a server's error log about its death,
// joined with " | ": from the first of the lines with which it reports
// its end after it last became ready (deathMarker, and the errors logged
// just before it), the error, signal and abort lines and the log's last
// two, all logged after that marker. It returns "" when the log says
// nothing about a death.
func DeathLines(log string) string {
	lines := logLines(log)
	started := max(lastReady(lines)+1, 0)
	first := -1
	for i := started; i < len(lines); i++ {
		if deathMarker.MatchString(lines[i]) {
			first = i
			break
		}
	}
	if first < 0 {
		return ""
	}
	// The errors logged just before the marker belong to it (MySQL's
	// "[ERROR] …" then "[ERROR] Aborting").
	for first > started && headerError.MatchString(lines[first-1]) {
		first--
	}
	// The last lines come after the marker too: the crash report's end.
	return pick(lines[first:], func(l string) bool { return headerError.MatchString(l) || deathMarker.MatchString(l) }, 2)
}

// logLines splits a log into its lines.
func logLines(log string) []string {
	return strings.Split(strings.TrimSpace(strings.ReplaceAll(log, "\r", "")), "\n")
}

// readyLine matches the line in which a server says it is ready for
// connections (MariaDB "… [Note] /usr/sbin/mariadbd: ready for
// connections.", MySQL "… [System] [MY-010931] [Server] /usr/sbin/mysqld:
// ready for connections. …").
var readyLine = regexp.MustCompile(`^[0-9TZ:.\- ]+\[(Note|System)\]( \[MY-\d+\] \[Server\])? \S+: ready for connections`)

// lastReady returns the index of the last line in which the server said
// it was ready for connections, or -1.
func lastReady(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if readyLine.MatchString(lines[i]) {
			return i
		}
	}
	return -1
}
