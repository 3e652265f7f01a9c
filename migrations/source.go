package migrations

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pressly/goose/v3"

	"github.com/testdbd/testdbd"
)

// Limits on what a template is built from. They keep one caller from
// exhausting the daemon's memory.
const (
	MaxFiles     = 10000
	MaxFileBytes = 16 << 20 // one migration file
	MaxTotal     = 48 << 20 // all migration files together
	MaxSeedBytes = 16 << 20
	MaxNameBytes = 255 // one migration file name
)

// File is one migration file.
type File struct {
	Name    string // base name, e.g. "00001_create_users.sql"
	Content []byte
}

// Source is everything a template is built from.
type Source struct {
	Files []File // sorted by name
	Seed  string // SQL run after the migrations
}

// LoadDir reads the goose migrations (*.sql) of a directory on the daemon's
// host, which must lie within root (the daemon's --migrations-root), as
// must every file it holds: symbolic links leading out of root are
// refused, so that a caller cannot have the daemon read what it may not.
// Nothing of a file that is not a goose migration is echoed in errors. It
// fails with EInvalid when the directory does not exist or holds no
// migrations, or a limit is exceeded.
func LoadDir(dir, root string) ([]File, error) {
	realRoot, err := realPath(root)
	if err != nil {
		return nil, fmt.Errorf("migrations root %q: %w", root, err)
	}
	// Whether the path exists is said only within the root: a path that
	// is missing and one outside the root (or leading out of it through a
	// symbolic link) get the same error, so that no caller can learn
	// which paths exist elsewhere on the daemon's host.
	if real, err := realPath(dir); err != nil || !within(real, realRoot) {
		return nil, testdbd.Errorf(testdbd.EInvalid,
			"migrations_dir %q does not exist or is outside %s, the directory this daemon reads migrations from (its --migrations-root): the path is read on the daemon's host; upload the files in \"migrations\" for a remote daemon, give a directory within the root, or start the daemon with a --migrations-root that holds them",
			dir, realRoot)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, testdbd.Errorf(testdbd.EInvalid, "migrations_dir %q: %v", dir, err)
	}
	if !st.IsDir() {
		return nil, testdbd.Errorf(testdbd.EInvalid, "migrations_dir %q is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, testdbd.Errorf(testdbd.EInvalid, "read migrations_dir %q: %v", dir, err)
	}
	var files []File
	var total int64
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		if len(files) == MaxFiles {
			return nil, testdbd.Errorf(testdbd.EInvalid, "migrations_dir %q holds more than %d migration files", dir, MaxFiles)
		}
		path := filepath.Join(dir, e.Name())
		if real, err := realPath(path); err != nil || !within(real, realRoot) {
			return nil, testdbd.Errorf(testdbd.EInvalid,
				"migration %s is a symbolic link leading out of %s (the daemon's --migrations-root): copy the file there, or upload it", e.Name(), realRoot)
		}
		info, err := os.Stat(path)
		if err != nil {
			return nil, testdbd.Errorf(testdbd.EInvalid, "migration %s: %v", e.Name(), err)
		}
		if info.Size() > MaxFileBytes {
			return nil, testdbd.Errorf(testdbd.EInvalid, "migration %s is %d bytes, over the limit of %d", e.Name(), info.Size(), MaxFileBytes)
		}
		total += info.Size()
		if total > MaxTotal {
			return nil, testdbd.Errorf(testdbd.EInvalid, "migrations in %q exceed %d bytes in all", dir, MaxTotal)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, testdbd.Errorf(testdbd.EInvalid, "read migration %s: %v", e.Name(), err)
		}
		files = append(files, File{Name: e.Name(), Content: b})
	}
	files, err = checkFiles(files)
	if err != nil {
		return nil, testdbd.Errorf(testdbd.EInvalid, "migrations_dir %q: %v", dir, err)
	}
	return files, nil
}

// CheckUpload validates uploaded migration files: names without path
// separators or "..", goose-style versioned .sql names, sizes within limits.
// It returns the files sorted by name.
func CheckUpload(files []File) ([]File, error) {
	if len(files) > MaxFiles {
		return nil, testdbd.Errorf(testdbd.EInvalid, "%d migration files uploaded; the limit is %d", len(files), MaxFiles)
	}
	var total int
	seen := map[string]bool{}
	for _, f := range files {
		if err := checkName(f.Name); err != nil {
			return nil, err
		}
		if seen[f.Name] {
			return nil, testdbd.Errorf(testdbd.EInvalid, "migration file %q uploaded twice", f.Name)
		}
		seen[f.Name] = true
		if len(f.Content) > MaxFileBytes {
			return nil, testdbd.Errorf(testdbd.EInvalid, "migration %s is %d bytes, over the limit of %d", f.Name, len(f.Content), MaxFileBytes)
		}
		total += len(f.Content)
		if total > MaxTotal {
			return nil, testdbd.Errorf(testdbd.EInvalid, "uploaded migrations exceed %d bytes in all", MaxTotal)
		}
	}
	out, err := checkFiles(append([]File(nil), files...))
	if err != nil {
		return nil, testdbd.Errorf(testdbd.EInvalid, "uploaded migrations: %v", err)
	}
	return out, nil
}

// CheckSeed validates seed SQL.
func CheckSeed(seed string) error {
	if len(seed) > MaxSeedBytes {
		return testdbd.Errorf(testdbd.EInvalid, "seed_sql is %d bytes, over the limit of %d: load big data sets in a migration instead", len(seed), MaxSeedBytes)
	}
	if !utf8.ValidString(seed) {
		return testdbd.Errorf(testdbd.EInvalid, "seed_sql is not valid UTF-8")
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return testdbd.Errorf(testdbd.EInvalid, "a migration file has no name")
	case len(name) > MaxNameBytes:
		return testdbd.Errorf(testdbd.EInvalid, "migration file name of %d bytes is longer than %d", len(name), MaxNameBytes)
	case strings.ContainsAny(name, "/\\\x00"), name == "." || name == "..", strings.Contains(name, ".."):
		return testdbd.Errorf(testdbd.EInvalid, "migration file name %q must be a plain file name: no path separators, no \"..\"", name)
	case !utf8.ValidString(name):
		return testdbd.Errorf(testdbd.EInvalid, "migration file name %q is not valid UTF-8", name)
	case !strings.HasSuffix(name, ".sql"):
		return testdbd.Errorf(testdbd.EInvalid, "migration file %q: only goose SQL migrations (.sql) are supported", name)
	}
	if _, err := goose.NumericComponent(name); err != nil {
		return testdbd.Errorf(testdbd.EInvalid, "migration file %q: goose needs a version prefix, e.g. 00001_create_users.sql", name)
	}
	return nil
}

// checkFiles sorts files by name and checks there is at least one, with
// unique versions. golang-migrate's layout (NNN_name.up.sql with
// NNN_name.down.sql) is taken as it is: its up files become goose
// migrations, each run as one multi-statement batch as golang-migrate
// runs it, and the down files are left out.
func checkFiles(files []File) ([]File, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no migrations: expected goose .sql files named like 00001_create_users.sql, or golang-migrate's 000001_create_users.up.sql")
	}
	files, err := fromGolangMigrate(files)
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	versions := map[int64]string{}
	for _, f := range files {
		if err := checkName(f.Name); err != nil {
			return nil, err
		}
		if !gooseUp.Match(f.Content) {
			return nil, fmt.Errorf("migration %s is not a goose SQL migration: it has no \"-- +goose Up\" line (goose runs what follows that line; \"-- +goose Down\" may follow)", f.Name)
		}
		v, _ := goose.NumericComponent(f.Name)
		if other, ok := versions[v]; ok {
			return nil, fmt.Errorf("migrations %s and %s have the same version %d", other, f.Name, v)
		}
		versions[v] = f.Name
	}
	return files, nil
}

// fromGolangMigrate turns golang-migrate's up files into goose migrations
// when the files are in its layout (any name ending in .up.sql or
// .down.sql); other files come back as they are.
func fromGolangMigrate(files []File) ([]File, error) {
	layout := false
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".up.sql") || strings.HasSuffix(f.Name, ".down.sql") {
			layout = true
			break
		}
	}
	if !layout {
		return files, nil
	}
	var out []File
	for _, f := range files {
		switch {
		case strings.HasSuffix(f.Name, ".down.sql"):
		case strings.HasSuffix(f.Name, ".up.sql"):
			body := bytes.TrimRight(f.Content, " \t\r\n")
			content := append([]byte("-- +goose Up\n-- +goose StatementBegin\n"), body...)
			content = append(content, "\n-- +goose StatementEnd\n"...)
			out = append(out, File{Name: f.Name, Content: content})
		default:
			return nil, fmt.Errorf("%s is neither an .up.sql nor a .down.sql file, while other files are in golang-migrate's layout: use one layout, goose's or golang-migrate's", f.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("golang-migrate layout without any .up.sql file")
	}
	return out, nil
}

// Hash returns the content hash of a template: the migration file names and
// contents, the seed, the engine flavor and version, and testdbd's version.
// Any change to any of them gives a new hash.
func Hash(src Source, engine testdbd.Engine) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte("testdbd template v1"))
	field([]byte(testdbd.Version))
	field([]byte(engine.Flavor))
	field([]byte(engine.Version))
	field([]byte(fmt.Sprint(len(src.Files))))
	for _, f := range src.Files {
		field([]byte(f.Name))
		field(f.Content)
	}
	field([]byte(src.Seed))
	return hex.EncodeToString(h.Sum(nil))
}

// realPath returns path made absolute with every symbolic link resolved.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// within reports whether path is root or below it (both real paths).
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// gooseUp matches goose's annotation that starts a migration's up part.
var gooseUp = regexp.MustCompile(`(?m)^\s*--\s*\+goose\s+Up\b`)

// ExternalHash returns the hash of a template built by the caller's own
// migrator: the caller's name for its content (e.g. a digest of its
// migration files), the engine flavor and version, and testdbd's version.
func ExternalHash(content string, engine testdbd.Engine) string {
	h := sha256.New()
	for _, f := range []string{"testdbd external template v1", testdbd.Version, string(engine.Flavor), engine.Version, content} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}
