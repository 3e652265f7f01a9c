package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExplain(t *testing.T) {
	mariadb := `2026-11-30 22:58:03 0 [Note] Starting MariaDB 11.8.9-MariaDB as process 1
2026-11-30 22:58:03 0 [Note] InnoDB: Completed initialization of buffer pool
2026-11-30 22:58:03 0 [Note] mariadbd: ready for connections.
261130 22:58:09 [ERROR] mysqld got signal 6 ;
Sorry, we probably made a mistake, and this is a bug.
Server version: 11.8.9-MariaDB
Thread pointer: 0x0
stack_bottom = 0x0 thread_stack 0x49000
Writing a core file...`
	got := Explain(mariadb)
	if !strings.Contains(got, "got signal 6") || !strings.Contains(got, "Writing a core file") || strings.Contains(got, "Starting MariaDB") {
		t.Errorf("mariadb crash: %s", got)
	}
	mysql := `2026-11-30T22:54:09.218513Z 0 [System] [MY-015015] [Server] MySQL Server - start.
2026-11-30T22:54:09.364552Z 0 [Warning] [MY-010075] [Server] No existing UUID has been found
2026-11-30T22:54:09.371127Z 0 [ERROR] [MY-010095] [Server] Failed to access directory for --secure-file-priv.
2026-11-30T22:54:09.371129Z 0 [ERROR] [MY-010119] [Server] Aborting
2026-11-30T22:54:09.371200Z 0 [System] [MY-010910] [Server] /usr/sbin/mysqld: Shutdown complete (mysqld 9.7.4-2)  (Debian).
2026-11-30T22:54:09.371300Z 0 [System] [MY-015016] [Server] MySQL Server - end.`
	got = Explain(mysql)
	if !strings.HasPrefix(got, "2026-11-30T22:54:09.371127Z 0 [ERROR] [MY-010095]") || !strings.Contains(got, "Aborting") ||
		!strings.Contains(got, "MySQL Server - end.") || strings.Contains(got, "UUID") {
		t.Errorf("mysql start failure: %s", got)
	}
	// No error: the last lines.
	if got := Explain("a\nb\nc\n"); got != "b | c" {
		t.Errorf("no error: %q", got)
	}
	if got := Explain(""); !strings.Contains(got, "empty") {
		t.Errorf("empty log: %q", got)
	}
	var long strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "[ERROR] line %d %s\n", i, strings.Repeat("x", 300))
	}
	if got := Explain(long.String()); len(got) > 2100 || !strings.Contains(got, "line 99") {
		t.Errorf("long log: %d bytes", len(got))
	}
}

func TestKeepCrashLog(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range KeptCrashLogs + 3 {
		p, err := KeepCrashLog(dir, fmt.Sprintf("n-%02d", i), []byte(fmt.Sprintf("log %d\n", i)))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		// Distinct modification times order the files.
		past := time.Now().Add(time.Duration(i-100) * time.Second)
		_ = os.Chtimes(p, past, past)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "crashes"))
	if len(entries) != KeptCrashLogs {
		t.Fatalf("%d logs kept, want %d", len(entries), KeptCrashLogs)
	}
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Errorf("oldest log %s not removed", paths[0])
	}
	b, err := os.ReadFile(paths[len(paths)-1])
	if err != nil || string(b) != fmt.Sprintf("log %d\n", KeptCrashLogs+2) {
		t.Errorf("newest log: %q, %v", b, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "crashes")); fi.Mode().Perm() != 0o700 {
		t.Errorf("crashes/ mode %v", fi.Mode())
	}
	big := make([]byte, MaxCrashLogBytes+10)
	big[len(big)-1] = 'Z'
	p, err := KeepCrashLog(dir, "big", big)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Size() > MaxCrashLogBytes+100 {
		t.Errorf("a long log kept whole: %d bytes", fi.Size())
	}
}

// TestDeathCause: a server's death is told by how it ended (the signal,
// from the process status or a container's exit code), and its log is
// quoted only for the lines about the death: never a SIGKILL'd server's
// (it cannot log one), never the lines of its life before (a client's
// failed login puts text of its choosing there), the crash report of a
// server that caught a fatal signal, and the start-up errors of one that
// never became ready.
func TestDeathCause(t *testing.T) {
	life := `2026-12-05 17:59:56 0 [Note] Starting MariaDB 10.11.19-MariaDB-log source revision  as process 30150
2026-12-05 17:59:56 0 [Note] /usr/sbin/mariadbd: ready for connections.
Version: '10.11.19-MariaDB-0+deb12u1-log'  socket: '/run/testdbd/x/mysqld.sock'  port: 38161  Debian 12
2026-12-05 17:59:57 7 [ERROR] InnoDB: Table test.t is corrupted in an unrelated way
2026-12-05 17:59:57 8 [ERROR] Incorrect definition of table tdb_x.Aborting_Out_of_memory_Fatal: a name a test chose
2026-12-05 17:59:58 5 [Warning] Access denied for user '261130 22:58:09 [ERROR] mysqld got signal 6 ;'@'localhost' (using password: YES)
2026-12-05 17:59:58 5 [Warning] Aborted connection 5 to db: 'unconnected' user: 'unauthenticated' host: '127.0.0.1' (This connection closed normally without authentication)`
	for _, e := range []Exit{{Signal: syscall.SIGKILL}, ContainerExit(137, false)} {
		got := DeathCause(e, life)
		if !strings.Contains(got, "killed by signal 9") || !strings.Contains(got, "SIGKILL") || !strings.Contains(got, "neither catch nor log") ||
			strings.Contains(got, "Aborted") || strings.Contains(got, "ERROR") || strings.Contains(got, "says") {
			t.Errorf("SIGKILL (%+v): %s", e, got)
		}
	}
	if got := DeathCause(ContainerExit(137, true), life); !strings.Contains(got, "out-of-memory killer") || strings.Contains(got, "Aborted") {
		t.Errorf("OOM-killed container: %s", got)
	}
	if got := DeathCause(Exit{Status: 1}, life); got != "exited with status 1; its error log says nothing about it" {
		t.Errorf("exit without a word: %s", got)
	}
	crash := life + `
261205 18:00:09 [ERROR] mysqld got signal 11 ;
Sorry, we probably made a mistake, and this is a bug.
Server version: 10.11.19-MariaDB
Writing a core file...`
	got := DeathCause(Exit{Signal: syscall.SIGSEGV}, crash)
	if !strings.HasPrefix(got, "was killed by signal 11 (SIGSEGV); its error log says: 261205 18:00:09 [ERROR] mysqld got signal 11 ;") ||
		!strings.Contains(got, "Writing a core file") || strings.Contains(got, "Aborted") || strings.Contains(got, "unrelated") {
		t.Errorf("crash: %s", got)
	}
	mysqlAbort := `2026-11-30T22:54:09.218513Z 0 [System] [MY-010931] [Server] /usr/sbin/mysqld: ready for connections. Version: '9.7.0'
2026-11-30T22:55:09.000000Z 9 [Warning] [MY-010055] [Server] IP address could not be resolved
2026-11-30T22:55:10.371127Z 0 [ERROR] [MY-012872] [InnoDB] Cannot create redo log files
2026-11-30T22:55:10.371129Z 0 [ERROR] [MY-010119] [Server] Aborting
2026-11-30T22:55:10.371300Z 0 [System] [MY-015016] [Server] MySQL Server - end.`
	got = DeathCause(Exit{Status: 1}, mysqlAbort)
	if !strings.Contains(got, "Cannot create redo log files") || !strings.Contains(got, "Aborting") || strings.Contains(got, "resolved") {
		t.Errorf("mysql abort: %s", got)
	}
	startup := `2026-11-30T22:54:09.371127Z 0 [ERROR] [MY-010095] [Server] Failed to access directory for --secure-file-priv.
2026-11-30T22:54:09.371129Z 0 [ERROR] [MY-010119] [Server] Aborting`
	if got := DeathCause(Exit{Status: 1}, startup); !strings.Contains(got, "before it was ready") || !strings.Contains(got, "secure-file-priv") {
		t.Errorf("start-up failure: %s", got)
	}
}
