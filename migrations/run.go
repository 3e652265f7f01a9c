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

// Run applies the migrations with goose (MySQL dialect) and then the seed to
// db, which must be connected to the template database with multi-statements
// enabled. A failure returns a *BuildError naming the file.
func Run(ctx context.Context, db *sql.DB, src Source, log *slog.Logger) (Result, error) {
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
	results, err := p.Up(ctx)
	res.Migrate = time.Since(start)
	for _, r := range results {
		if r.Error == nil {
			res.Applied = append(res.Applied, path.Base(r.Source.Path))
		}
	}
	if err != nil {
		var pe *goose.PartialError
		if errors.As(err, &pe) && pe.Failed != nil && pe.Failed.Source != nil {
			for _, r := range pe.Applied {
				res.Applied = append(res.Applied, path.Base(r.Source.Path))
			}
			return res, &BuildError{File: path.Base(pe.Failed.Source.Path), Err: pe.Err}
		}
		return res, &BuildError{File: "migrations", Err: err}
	}
	if res.Version, err = p.GetDBVersion(ctx); err != nil {
		return res, fmt.Errorf("read goose version: %w", err)
	}
	if src.Seed != "" {
		start = time.Now()
		_, err := db.ExecContext(ctx, src.Seed)
		res.Seed = time.Since(start)
		if err != nil {
			return res, &BuildError{File: "seed_sql", Err: err}
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
