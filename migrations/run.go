package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"testing/fstest"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
)

// Result is what running a template's migrations and seed did.
type Result struct {
	Version int64         // the goose version reached
	Applied []string      // migration files applied, in order
	Migrate time.Duration // running the migrations
	Seed    time.Duration // running the seed
}

// BuildError says which file of a template failed and what the server said.
type BuildError struct {
	File string // the migration file, or "seed_sql"
	Err  error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("%s failed: %v", e.File, serverMessage(e.Err))
}

func (e *BuildError) Unwrap() error { return e.Err }

// serverMessage reduces goose's wrapping to the server's own words.
func serverMessage(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Error()
	}
	return err.Error()
}

// SeedFile is what errors and progress call the seed.
const SeedFile = "seed_sql"

// Run applies the migrations with goose (MySQL dialect), one at a time, and
// then the seed to db, which must be connected to the template database
// with multi-statements enabled. A failure returns a *BuildError naming the
// file. onStep, when set, is told each migration (1-based, of how many) as
// it starts, and the seed as SeedFile.
func Run(ctx context.Context, db *sql.DB, src Source, log *slog.Logger, onStep func(step, steps int, file string)) (Result, error) {
	if onStep == nil {
		onStep = func(int, int, string) {}
	}
	var res Result
	fsys := fstest.MapFS{}
	for _, f := range src.Files {
		fsys[f.Name] = &fstest.MapFile{Data: f.Content, Mode: 0o444}
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p, err := goose.NewProvider(goose.DialectMySQL, db, fs.FS(fsys),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(log),
	)
	if err != nil {
		return res, &BuildError{File: "migrations", Err: err}
	}
	start := time.Now()
	sources := p.ListSources()
	for i, s := range sources {
		onStep(i+1, len(sources), path.Base(s.Path))
		r, err := p.UpByOne(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			break
		}
		if err != nil {
			res.Migrate = time.Since(start)
			file := path.Base(s.Path)
			if r != nil && r.Source != nil {
				file = path.Base(r.Source.Path)
			}
			var pe *goose.PartialError
			if errors.As(err, &pe) && pe.Failed != nil && pe.Failed.Source != nil {
				file, err = path.Base(pe.Failed.Source.Path), pe.Err
			}
			return res, &BuildError{File: file, Err: err}
		}
		res.Applied = append(res.Applied, path.Base(r.Source.Path))
	}
	res.Migrate = time.Since(start)
	if res.Version, err = p.GetDBVersion(ctx); err != nil {
		return res, fmt.Errorf("read goose version: %w", err)
	}
	if src.Seed != "" {
		onStep(0, 0, SeedFile)
		start = time.Now()
		_, err := db.ExecContext(ctx, src.Seed)
		res.Seed = time.Since(start)
		if err != nil {
			return res, &BuildError{File: SeedFile, Err: err}
		}
	}
	return res, nil
}

// IsBuildError reports whether err is a failure of the user's migrations or
// seed (as opposed to the daemon or the server failing).
func IsBuildError(err error) bool {
	var be *BuildError
	return errors.As(err, &be)
}
