package instance

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSizesFollowWrites: after random file work of the kinds a server does
// in a database directory (files created, written, extended, truncated,
// preallocated, holes punched, renamed over others, removed, the directory
// dropped and made again), each kept measurement equals a fresh read of
// the directory, and measuring again reads only the files written since.
func TestSizesFollowWrites(t *testing.T) {
	onFilesystems(t, func(t *testing.T, datadir string) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		z, w := newWork(t, datadir, seed)
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
			holes := map[string]bool{}
			want, _, wantOK := dirBytes(filepath.Join(datadir, db), nil, holes)
			written += len(holes) // measured every time
			got, ok := z.bytes(datadir, db)
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

// onFilesystems runs f in a scratch directory on tmpfs (where servers keep
// their data) and in the test's temporary directory (another filesystem,
// here).
func onFilesystems(t *testing.T, f func(t *testing.T, datadir string)) {
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
			f(t, datadir)
		})
	}
}

// TestSizesAfterOverflow: when more events came than the kernel queues,
// the next measurement reads the directory whole and is right.
func TestSizesAfterOverflow(t *testing.T) {
	datadir := t.TempDir()
	z, w := newWork(t, datadir, 1)
	w.mkdb("db", 3)
	if _, ok := z.bytes(datadir, "db"); !ok {
		t.Fatal("not measured")
	}
	overflow(t, w, "db")
	w.write(w.file("db", "t2.ibd"), 0, 1<<20) // its event is lost to the overflow
	got, _ := z.bytes(datadir, "db")
	want, _, _ := dirBytes(filepath.Join(datadir, "db"), nil, nil)
	if got != want {
		t.Fatalf("after an overflow: measured %d, the directory holds %d", got, want)
	}
}

// newWork returns sizes to test and a dirWork in datadir with a random
// source seeded by seed; the test is skipped where inotify is missing.
func newWork(t *testing.T, datadir string, seed uint64) (*sizes, *dirWork) {
	t.Helper()
	z := newSizes()
	t.Cleanup(z.close)
	if z.fd < 0 {
		t.Skip("no inotify here: measurements read directories whole")
	}
	w := &dirWork{t: t, rng: rand.New(rand.NewPCG(seed, 1)), datadir: datadir, open: map[string]*os.File{}}
	t.Cleanup(w.closeAll)
	return z, w
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
	case 0, 1, 2, 3, 4: // rows written: pages in place or appended
		f := w.file(db, name)
		fi, err := f.Stat()
		if err != nil {
			w.t.Fatal(err)
		}
		w.write(f, w.rng.Int64N(fi.Size()+1), 1+w.rng.IntN(3*4096))
	case 5, 6: // the file extended ahead of need
		if err := unix.Fallocate(int(w.file(db, name).Fd()), 0, int64(w.rng.IntN(64))*4096, 1<<16); err != nil {
			w.t.Skipf("fallocate: %v", err)
		}
	case 7: // pages given back (a page-compressed table's), or a hole made by extending the size
		f := w.file(db, name)
		if w.rng.IntN(2) == 0 {
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 8192); err != nil {
				w.t.Skipf("punch a hole: %v", err)
			}
		} else if fi, err := f.Stat(); err != nil || f.Truncate(fi.Size()+1<<16) != nil {
			w.t.Fatal("extend a file", err)
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

// TestSizesWithoutEvents: what events do not tell of is measured anyway:
// a database dropped and made again under its name while its events were
// lost to an overflow, or while something kept the old directory open;
// writes through Linux's native AIO (no event) into a file's holes at
// once, and past the end of a file within wholeEvery.
func TestSizesWithoutEvents(t *testing.T) {
	onFilesystems(t, measureWithoutEvents)
}

func measureWithoutEvents(t *testing.T, datadir string) {
	z, w := newWork(t, datadir, 3)
	check := func(what string) {
		t.Helper()
		got, _ := z.bytes(datadir, "db")
		want, _, _ := dirBytes(filepath.Join(datadir, "db"), nil, nil)
		if got != want {
			t.Fatalf("%s: measured %d, the directory holds %d", what, got, want)
		}
	}
	remake := func() {
		t.Helper()
		w.closeAll()
		clear(w.open)
		if err := os.RemoveAll(filepath.Join(datadir, "db")); err != nil {
			t.Fatal(err)
		}
		w.mkdb("db", 2)
	}

	w.mkdb("db", 2)
	check("first")
	overflow(t, w, "db")
	remake()
	check("made again after an overflow")
	w.write(w.file("db", "t0.ibd"), 0, 8<<20)
	check("written after being made again after an overflow")

	held, err := os.Open(filepath.Join(datadir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	remake()
	check("made again while the old directory is held open")
	w.write(w.file("db", "t1.ibd"), 0, 4<<20)
	check("written after being made again while the old directory is held open")
	held.Close()

	f := w.file("db", "t0.ibd")
	if err := f.Truncate(32 << 20); err != nil { // a hole of 24 MB
		t.Fatal(err)
	}
	check("extended with a hole")
	if !aioWrite(t, f, 16<<20, 1<<20) {
		return
	}
	check("written into the hole with AIO")
	// t1.ibd has no hole: AIO past its end changes what it takes without
	// an event, and without making a hole.
	g := w.file("db", "t1.ibd")
	if err := g.Truncate(0); err != nil {
		t.Fatal(err)
	}
	w.write(g, 0, 1<<20)
	check("t1.ibd written again")
	aioWrite(t, g, 1<<20, 1<<20)
	time.Sleep(wholeEvery)
	check("a while after AIO past the end of a file")
}

// TestSizesBoundedNames: the names of files written in a directory not
// measured meanwhile are kept up to a bound only.
func TestSizesBoundedNames(t *testing.T) {
	datadir := t.TempDir()
	z, w := newWork(t, datadir, 5)
	w.mkdb("db", 2)
	w.mkdb("other", 2)
	z.bytes(datadir, "db")
	for i := 0; i < 3*maxDirty; i++ {
		if err := os.WriteFile(filepath.Join(datadir, "db", fmt.Sprintf("#sql-%d.ibd", i)), []byte{1}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	z.bytes(datadir, "other") // takes in the events of both
	z.mu.Lock()
	n := len(z.byDB["db"].dirty)
	z.mu.Unlock()
	if n > maxDirty {
		t.Fatalf("%d names kept for a directory not measured since they were written (bound %d)", n, maxDirty)
	}
	got, _ := z.bytes(datadir, "db")
	want, _, _ := dirBytes(filepath.Join(datadir, "db"), nil, nil)
	if got != want {
		t.Fatalf("measured %d, the directory holds %d", got, want)
	}
}

// overflow fills the event queue with writes to two files of db in turn
// (consecutive events that differ do not merge).
func overflow(t *testing.T, w *dirWork, db string) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip(err)
	}
	queue, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if queue <= 0 || queue > 1<<20 {
		t.Skipf("max_queued_events %d", queue)
	}
	f0, f1 := w.file(db, "t0.ibd"), w.file(db, "t1.ibd")
	for i := 0; i <= queue; i++ {
		f := f0
		if i%2 == 1 {
			f = f1
		}
		if _, err := f.WriteAt([]byte{1}, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// aioWrite writes n zero bytes at off of f through Linux's native AIO
// (io_setup, io_submit, io_getevents), as a server's libaio does; false
// (and the test skipped) when this kernel refuses it.
func aioWrite(t *testing.T, f *os.File, off int64, n int) bool {
	t.Helper()
	var ctx uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		t.Skipf("io_setup: %v", e)
		return false
	}
	defer unix.Syscall(unix.SYS_IO_DESTROY, ctx, 0, 0) //nolint:errcheck
	buf := make([]byte, n)
	// struct iocb (linux/aio_abi.h), little-endian field order.
	iocb := struct {
		data         uint64
		key, rwFlags uint32
		opcode       uint16
		reqprio      int16
		fd           uint32
		buf, nbytes  uint64
		offset       int64
		reserved2    uint64
		flags, resfd uint32
	}{opcode: 1 /* IOCB_CMD_PWRITE */, fd: uint32(f.Fd()), buf: uint64(uintptr(unsafe.Pointer(&buf[0]))), nbytes: uint64(n), offset: off}
	list := [1]uintptr{uintptr(unsafe.Pointer(&iocb))}
	if r, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, ctx, 1, uintptr(unsafe.Pointer(&list[0]))); e != 0 || r != 1 {
		t.Skipf("io_submit: %v", e)
		return false
	}
	var events [1]struct {
		data, obj uint64
		res, res2 int64
	}
	if r, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, ctx, 1, 1, uintptr(unsafe.Pointer(&events[0])), 0, 0); e != 0 || r != 1 {
		t.Fatalf("io_getevents: %d %v", r, e)
	}
	if events[0].res != int64(n) {
		t.Fatalf("AIO write: %d of %d bytes", events[0].res, n)
	}
	runtime.KeepAlive(buf)
	return true
}

// TestSizesOneDirectoryTwoNames: a directory measured under two names (a
// link) is followed under the latest, without reading it whole again.
func TestSizesOneDirectoryTwoNames(t *testing.T) {
	datadir := t.TempDir()
	z, w := newWork(t, datadir, 7)
	w.mkdb("a", 2)
	if err := os.Symlink("a", filepath.Join(datadir, "b")); err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "b", "b", "b"}
	for i, db := range names {
		w.write(w.file("a", "t0.ibd"), int64(i)<<20, 1<<20)
		got, _ := z.bytes(datadir, db)
		want, _, _ := dirBytes(filepath.Join(datadir, "a"), nil, nil)
		if got != want {
			t.Fatalf("measurement %d, as %s: %d, the directory holds %d", i, db, got, want)
		}
	}
	// Read whole under each name once (2 files each), then the one file
	// written before each measurement.
	if want := 2*2 + len(names) - 2; z.stats > want {
		t.Fatalf("%d files measured, %d expected: the directory was read whole again", z.stats, want)
	}
}
