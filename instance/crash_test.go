package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
