package instance

import (
	"errors"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sizes keeps the bytes of the database directories DatabaseBytes measured
// up to date from the kernel's file events (inotify), so that measuring
// again costs a system call per file written since, not one per file:
// this runs after every recycle and, for each leased database, at every
// space check, and a database of a hundred tables has two hundred files.
// The first measurement of a directory watches it, then reads it whole;
// an event queued before a read is taken in before the next one answers,
// so no write is missed. Where events cannot be had (no inotify, the
// watch limit reached, the queue overflowed) directories are read whole.
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
	total int64
	dirty map[string]bool // files with events since the last measurement
	whole bool            // read the whole directory next time
}

// sizeEvents are the events that can change the bytes a directory's
// files take, or end the watch.
const sizeEvents = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

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
		return z.readWhole(dir, nil)
	}
	z.drain()
	d := z.byDB[db]
	if d == nil {
		wd, err := unix.InotifyAddWatch(z.fd, dir, sizeEvents)
		if err != nil {
			return z.readWhole(dir, nil) // gone, or no watch left: measure without one
		}
		d = &dirSizes{db: db, wd: int32(wd), dirty: map[string]bool{}, whole: true}
		z.byDB[db], z.byWd[d.wd] = d, d
	}
	if d.whole {
		return z.readAll(dir, d)
	}
	for name := range d.dirty {
		d.total -= d.files[name]
		delete(d.files, name)
		var st unix.Stat_t
		z.stats++
		if err := unix.Fstatat(unix.AT_FDCWD, dir+"/"+name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			d.files[name] = st.Blocks * 512
			d.total += st.Blocks * 512
		} else if !errors.Is(err, unix.ENOENT) {
			d.whole = true
		}
	}
	clear(d.dirty)
	if d.whole { // a file could not be read: read them all
		return z.readAll(dir, d)
	}
	return d.total, true
}

// readAll reads d's directory whole.
func (z *sizes) readAll(dir string, d *dirSizes) (int64, bool) {
	files := map[string]int64{}
	n, ok := z.readWhole(dir, files)
	if !ok {
		z.forget(d)
		return 0, false
	}
	d.files, d.total, d.whole = files, n, false
	clear(d.dirty)
	return n, true
}

// readWhole measures every data file of dir, recording each in files
// unless files is nil.
func (z *sizes) readWhole(dir string, files map[string]int64) (int64, bool) {
	n, stats, ok := dirBytes(dir, files)
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
			case ev.Mask&unix.IN_IGNORED != 0:
				delete(z.byWd, d.wd) // the directory is gone: its watch with it
				if z.byDB[d.db] == d {
					delete(z.byDB, d.db)
				}
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
				z.forget(d)
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
