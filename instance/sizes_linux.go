package instance

import (
	"errors"
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sizes keeps the bytes of the database directories DatabaseBytes measured
// up to date from the kernel's file events (inotify), so that measuring
// again costs a system call per file written since, not one per file:
// this runs after every recycle and, for each leased database, at every
// space check, and a database of a hundred tables has two hundred files.
//
// The first measurement of a directory watches it, then reads it whole; an
// event queued before a measurement is taken in before it answers. Events
// do not tell of every change, so a measurement also:
//   - checks that the directory is the one watched (a database dropped and
//     made again under its name while its events were lost, or while
//     something kept the old directory open, is another directory, maybe
//     with the old one's inode number);
//   - measures again every file with holes (allocated bytes short of its
//     size), whichever events came: writes through Linux's native AIO
//     (io_submit), which a server may use, send none, and only writes into
//     holes change what an InnoDB file takes without an event (InnoDB
//     extends its files with fallocate or ftruncate, which send one);
//   - reads the directory whole when it was last read wholeEvery ago, so
//     whatever else escapes the events (writes through a shared mapping,
//     AIO past the end of a file) is seen within that time.
//
// Where events cannot be had (no inotify, no watch left, the queue
// overflowed) directories are read whole.
type sizes struct {
	mu    sync.Mutex
	fd    int // inotify instance, non-blocking; -1 when unavailable or closed
	byDB  map[string]*dirSizes
	byWd  map[int32]*dirSizes
	buf   []byte
	stats int // files stat'ed, for tests
}

// dirSizes is one watched database directory.
type dirSizes struct {
	db    string
	wd    int32
	files map[string]int64 // data files and their allocated bytes
	holes map[string]bool  // data files with holes, measured every time
	dirty map[string]bool  // files with events since the last measurement
	whole bool             // read the whole directory next time
	read  time.Time        // when it was last read whole
	used  time.Time        // when it was last measured
}

const (
	// sizeEvents are the events that can change the bytes a directory's
	// files take, or end the watch.
	sizeEvents = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	// wholeEvery bounds how long a change no event told of goes unseen.
	wholeEvery = 2 * time.Second
	// forgetAfter: a directory not measured for this long is no longer
	// watched (a template's databases are measured once, when built).
	forgetAfter = time.Minute
	// maxDirty: a directory with more files written since it was last
	// measured is read whole instead of keeping their names.
	maxDirty = 1024
)

func newSizes() *sizes {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &sizes{fd: fd, byDB: map[string]*dirSizes{}, byWd: map[int32]*dirSizes{}, buf: make([]byte, 64<<10)}
}

// close stops watching; later measurements read directories whole.
func (z *sizes) close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.fd >= 0 {
		_ = unix.Close(z.fd)
		z.fd = -1
	}
	z.byDB, z.byWd = map[string]*dirSizes{}, map[int32]*dirSizes{}
}

// bytes returns what the data files of database db under datadir take.
func (z *sizes) bytes(datadir, db string) (int64, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	dir := filepath.Join(datadir, db)
	if z.fd < 0 {
		return z.readWhole(dir, nil, nil)
	}
	z.drain()
	now := time.Now()
	for _, d := range z.byDB {
		if d.db != db && now.Sub(d.used) > forgetAfter {
			z.forget(d)
		}
	}
	// Watching the directory again returns the watch it has, if any: a
	// database dropped and made again under its name while the drop's
	// events were lost (to an overflow) or held back (something keeps the
	// old directory open) gets a new one. Watch numbers are not reused
	// before billions more are handed out.
	wd, err := unix.InotifyAddWatch(z.fd, dir, sizeEvents)
	d := z.byDB[db]
	if d != nil && (err != nil || d.wd != int32(wd)) {
		z.forget(d)
		d = nil
	}
	if err != nil {
		return z.readWhole(dir, nil, nil) // gone, or no watch left: measure without one
	}
	if d == nil {
		if old := z.byWd[int32(wd)]; old != nil {
			// The same directory under another name (a link; the server
			// makes none): one record per watch, the latest name's.
			delete(z.byDB, old.db)
		}
		d = &dirSizes{db: db, wd: int32(wd), dirty: map[string]bool{}, whole: true}
		z.byDB[db], z.byWd[d.wd] = d, d
	}
	d.used = now
	if d.whole || now.Sub(d.read) >= wholeEvery {
		return z.readAll(dir, d)
	}
	for name := range d.holes {
		d.dirty[name] = true
	}
	for name := range d.dirty {
		delete(d.files, name)
		delete(d.holes, name)
		var st unix.Stat_t
		z.stats++
		if err := unix.Fstatat(unix.AT_FDCWD, dir+"/"+name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			d.add(name, &st)
		} else if !errors.Is(err, unix.ENOENT) {
			d.whole = true
		}
	}
	clear(d.dirty)
	if d.whole { // a file could not be read: read them all
		return z.readAll(dir, d)
	}
	var n int64
	for _, b := range d.files {
		n += b
	}
	return n, true
}

// add records file name of d, measured as st.
func (d *dirSizes) add(name string, st *unix.Stat_t) {
	n := st.Blocks * 512
	d.files[name] = n
	if n < st.Size {
		d.holes[name] = true
	}
}

// readAll reads d's directory whole.
func (z *sizes) readAll(dir string, d *dirSizes) (int64, bool) {
	d.files, d.holes = map[string]int64{}, map[string]bool{}
	n, ok := z.readWhole(dir, d.files, d.holes)
	if !ok {
		z.forget(d)
		return 0, false
	}
	d.whole, d.read = false, time.Now()
	clear(d.dirty)
	return n, true
}

// readWhole measures every data file of dir, recording each in files and
// those with holes in holes unless they are nil.
func (z *sizes) readWhole(dir string, files map[string]int64, holes map[string]bool) (int64, bool) {
	n, stats, ok := dirBytes(dir, files, holes)
	z.stats += stats
	return n, ok
}

// drain takes in the queued events.
func (z *sizes) drain() {
	for {
		n, err := unix.Read(z.fd, z.buf)
		if err != nil || n <= 0 {
			return // EAGAIN: nothing more queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&z.buf[off]))
			nameAt := off + unix.SizeofInotifyEvent
			off = nameAt + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				for _, d := range z.byDB {
					d.whole = true
				}
				continue
			}
			d := z.byWd[ev.Wd]
			switch {
			case d == nil:
			case ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
				z.forget(d) // the directory is gone or moved (a watch ignored already is no error)
			case d.whole:
			case len(d.dirty) >= maxDirty:
				d.whole = true
				clear(d.dirty)
			case ev.Len > 0:
				name := unix.ByteSliceToString(z.buf[nameAt:off])
				if !definitionFile(name) {
					d.dirty[name] = true
				}
			}
		}
	}
}

// forget stops watching d's directory.
func (z *sizes) forget(d *dirSizes) {
	if z.byDB[d.db] == d {
		delete(z.byDB, d.db)
	}
	delete(z.byWd, d.wd)
	_, _ = unix.InotifyRmWatch(z.fd, uint32(d.wd))
}
