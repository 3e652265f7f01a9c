package templates

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"
)

// Cache keeps images of built templates in a directory, one file per
// template hash (<hash>.tdbimg), so that a daemon that starts again, or
// another daemon pointed at the same directory (a CI cache restored
// between jobs), gets a template back without running its migrations.
// Files are written under a temporary name and renamed into place, so a
// reader never sees half an image; an image written by another testdbd
// version or on another engine is ignored (ImageHeader.Compatible). When the
// images together pass MaxBytes, the least recently used go. It is safe for
// concurrent use, and by several processes.
type Cache struct {
	Dir      string
	MaxBytes int64

	mu sync.Mutex // one prune at a time in this process
}

// cacheExt is an image file's extension in the cache directory.
const cacheExt = ".tdbimg"

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// path returns the file of hash, or "" for a string that is no hash.
func (c *Cache) path(hash string) string {
	if c == nil || c.Dir == "" || !hashRE.MatchString(hash) {
		return ""
	}
	return filepath.Join(c.Dir, hash+cacheExt)
}

// Open returns the image of hash, marking it used; fs.ErrNotExist when the
// cache has none.
func (c *Cache) Open(hash string) (*os.File, error) {
	p := c.path(hash)
	if p == "" {
		return nil, fs.ErrNotExist
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // the LRU order
	return f, nil
}

// Has reports whether the cache holds an image of hash.
func (c *Cache) Has(hash string) bool {
	p := c.path(hash)
	if p == "" {
		return false
	}
	_, err := os.Stat(p)
	return err == nil
}

// Remove drops the image of hash (one that cannot be used).
func (c *Cache) Remove(hash string) {
	if p := c.path(hash); p != "" {
		_ = os.Remove(p)
	}
}

// Save writes the image of hash with write, then makes room for it by
// dropping the least recently used others. An image bigger than MaxBytes
// is not kept.
func (c *Cache) Save(hash string, write func(io.Writer) error) (int64, error) {
	p := c.path(hash)
	if p == "" {
		return 0, fmt.Errorf("template cache: %q is not a template hash", hash)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return 0, fmt.Errorf("template cache: %w", err)
	}
	f, err := os.CreateTemp(c.Dir, "."+hash[:12]+"-*.tmp")
	if err != nil {
		return 0, fmt.Errorf("template cache: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a failure; a no-op after the rename
	if err := write(f); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if c.MaxBytes > 0 && st.Size() > c.MaxBytes {
		return st.Size(), fmt.Errorf("template cache: the image is %d bytes, more than the cache's %d (--cache-size)", st.Size(), c.MaxBytes)
	}
	if err := os.Rename(tmp, p); err != nil {
		return 0, fmt.Errorf("template cache: %w", err)
	}
	c.prune(p)
	return st.Size(), nil
}

// prune drops the least recently used images until the cache is within
// MaxBytes, never keep (the one just written).
func (c *Cache) prune(keep string) {
	if c.MaxBytes <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != cacheExt {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{filepath.Join(c.Dir, e.Name()), info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for _, f := range files {
		if total <= c.MaxBytes {
			break
		}
		if f.path == keep {
			continue
		}
		if err := os.Remove(f.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
		}
	}
}
