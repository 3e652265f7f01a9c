package instance

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSizesFollowWrites: after random file work of the kinds a server does
// in a database directory (files created, written, extended, truncated,
// preallocated, holes punched, renamed over others, removed, the directory
// dropped and made again), each kept measurement equals a fresh read of
// the directory, and measuring again reads only the files written since.
func TestSizesFollowWrites(t *testing.T) {
	for _, root := range []string{"/dev/shm", ""} {
		name := "tmpfs"
		if root == "" {
			name = "tempdir"
		}
		t.Run(name, func(t *testing.T) {
			if root != "" {
				if _, err := os.Stat(root); err != nil {
					t.Skipf("%s: %v", root, err)
				}
			}
			datadir, err := os.MkdirTemp(root, "sizes")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(datadir)
			z := newSizes()
			defer z.close()
			if z.fd < 0 {
				t.Skip("no inotify here: measurements read directories whole")
			}
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			w := &dirWork{t: t, rng: rand.New(rand.NewPCG(seed, 1)), datadir: datadir, open: map[string]*os.File{}}
			defer w.closeAll()
			dbs := []string{"a", "b", "c"}
			const files = 40
			for _, db := range dbs {
				w.mkdb(db, files)
			}
			measures, written := 0, 0
			for round := 0; round < 400; round++ {
				db := dbs[w.rng.IntN(len(dbs))]
				for k := w.rng.IntN(6); k > 0; k-- {
					written += w.step(db, files)
				}
				got, ok := z.bytes(datadir, db)
				want, _, wantOK := dirBytes(filepath.Join(datadir, db), nil)
				if ok != wantOK || got != want {
					t.Fatalf("round %d, database %s: measured %d (ok %v), the directory holds %d (ok %v)", round, db, got, ok, want, wantOK)
				}
				measures++
			}
			// Each database was read whole a few times (first measured,
			// dropped and made again); the rest took in what was written.
			if limit := written + 3*files*(len(dbs)+w.drops); z.stats > limit {
				t.Fatalf("%d files measured for %d measurements of %d files each, %d writes: the directories were read whole each time (at most %d expected)",
					z.stats, measures, files, written, limit)
			}
			t.Logf("%d measurements, %d files measured, %d writes, %d drops", measures, z.stats, written, w.drops)
		})
	}
}

// TestSizesAfterOverflow: when more events came than the kernel queues,
// the next measurement reads the directory whole and is right.
func TestSizesAfterOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip(err)
	}
	queue, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if queue <= 0 || queue > 1<<20 {
		t.Skipf("max_queued_events %d", queue)
	}
	datadir := t.TempDir()
	z := newSizes()
	defer z.close()
	if z.fd < 0 {
		t.Skip("no inotify here")
	}
	w := &dirWork{t: t, rng: rand.New(rand.NewPCG(1, 2)), datadir: datadir, open: map[string]*os.File{}}
	defer w.closeAll()
	w.mkdb("db", 3)
	if _, ok := z.bytes(datadir, "db"); !ok {
		t.Fatal("not measured")
	}
	// The queue filled by writes to two files in turn (consecutive events
	// that differ do not merge), then a third file grown: its event is
	// lost to the overflow.
	f0, f1 := w.file("db", "t0.ibd"), w.file("db", "t1.ibd")
	for i := 0; i <= queue; i++ {
		f := f0
		if i%2 == 1 {
			f = f1
		}
		if _, err := f.WriteAt([]byte{1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	w.write(w.file("db", "t2.ibd"), 0, 1<<20)
	got, _ := z.bytes(datadir, "db")
	want, _, _ := dirBytes(filepath.Join(datadir, "db"), nil)
	if got != want {
		t.Fatalf("after an overflow: measured %d, the directory holds %d", got, want)
	}
}

// dirWork does random file work in database directories.
type dirWork struct {
	t       *testing.T
	rng     *rand.Rand
	datadir string
	open    map[string]*os.File // files kept open across measurements, as a server does
	drops   int
}

func (w *dirWork) mkdb(db string, files int) {
	dir := filepath.Join(w.datadir, db)
	if err := os.Mkdir(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i < files; i++ {
		w.write(w.file(db, fmt.Sprintf("t%d.ibd", i)), 0, 1+w.rng.IntN(5)*4096)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%d.frm", i)), make([]byte, 1000), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *dirWork) file(db, name string) *os.File {
	p := filepath.Join(w.datadir, db, name)
	if f := w.open[p]; f != nil {
		return f
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
	w.open[p] = f
	return f
}

func (w *dirWork) forget(db, name string) {
	p := filepath.Join(w.datadir, db, name)
	if f := w.open[p]; f != nil {
		f.Close()
		delete(w.open, p)
	}
}

func (w *dirWork) closeAll() {
	for _, f := range w.open {
		f.Close()
	}
}

func (w *dirWork) write(f *os.File, off int64, n int) {
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		w.t.Fatal(err)
	}
}

// step does one random thing to db; it returns how many files it changed.
func (w *dirWork) step(db string, files int) int {
	name := fmt.Sprintf("t%d.ibd", w.rng.IntN(files))
	p := filepath.Join(w.datadir, db, name)
	switch w.rng.IntN(20) {
	case 0, 1, 2, 3, 4: // rows written: pages in place or past the end
		w.write(w.file(db, name), int64(w.rng.IntN(64))*4096, 1+w.rng.IntN(3*4096))
	case 5, 6: // the file extended ahead of need
		if err := unix.Fallocate(int(w.file(db, name).Fd()), 0, int64(w.rng.IntN(64))*4096, 1<<16); err != nil {
			w.t.Skipf("fallocate: %v", err)
		}
	case 7: // pages given back
		if err := unix.Fallocate(int(w.file(db, name).Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 8192); err != nil {
			w.t.Skipf("punch a hole: %v", err)
		}
	case 8: // TRUNCATE TABLE: shrunk in place
		if err := w.file(db, name).Truncate(int64(w.rng.IntN(4)) * 4096); err != nil {
			w.t.Fatal(err)
		}
	case 9, 10: // a table rebuilt: a new file renamed over the old one
		tmp := "#sql-alter-" + strconv.Itoa(w.rng.IntN(1000)) + ".ibd"
		w.write(w.file(db, tmp), 0, 1+w.rng.IntN(8*4096))
		w.forget(db, tmp)
		w.forget(db, name)
		if err := os.Rename(filepath.Join(w.datadir, db, tmp), p); err != nil {
			w.t.Fatal(err)
		}
		return 2
	case 11: // a table dropped
		w.forget(db, name)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			w.t.Fatal(err)
		}
	case 12: // a definition file (not counted) rewritten
		if err := os.WriteFile(filepath.Join(w.datadir, db, "t0.frm"), make([]byte, 1+w.rng.IntN(9000)), 0o644); err != nil {
			w.t.Fatal(err)
		}
		return 0
	case 13: // the database dropped and made again under its name
		if w.rng.IntN(8) != 0 {
			return 0
		}
		for p := range w.open {
			if filepath.Dir(p) == filepath.Join(w.datadir, db) {
				w.open[p].Close()
				delete(w.open, p)
			}
		}
		if err := os.RemoveAll(filepath.Join(w.datadir, db)); err != nil {
			w.t.Fatal(err)
		}
		w.mkdb(db, files)
		w.drops++
		return 0
	default: // another database written meanwhile
		other := filepath.Join(w.datadir, db+"x")
		if err := os.MkdirAll(other, 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, name), make([]byte, 1+w.rng.IntN(9000)), 0o644); err != nil {
			w.t.Fatal(err)
		}
		return 0
	}
	return 1
}
