package templates

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/testdbd/testdbd/instance"
	"github.com/testdbd/testdbd/migrations"
	"github.com/testdbd/testdbd/schema"
	"github.com/testdbd/testdbd/strategies"
)

// Built is a template database built on one instance.
type Built struct {
	Database string
	Schema   *schema.Schema
	Result   migrations.Result
	Capture  time.Duration
}

// Build creates database on inst and builds the template of src in it: the
// migrations, then the seed, then a capture of the definition. ddl is the
// instance's DDL accounting: creating and dropping the database are
// counted, the migrations run as uncounted work. On failure the database is
// dropped; a failure of the user's migrations or seed is a
// *migrations.BuildError.
func Build(ctx context.Context, inst *instance.Member, ddl *strategies.DDLCounter, database string, src migrations.Source, log *slog.Logger) (*Built, error) {
	if err := ddl.Exec(ctx, inst.DB, 1, "CREATE DATABASE "+schema.Quote(database)); err != nil {
		return nil, fmt.Errorf("create template database: %w", err)
	}
	fail := func(err error) (*Built, error) {
		_ = schema.Drop(context.WithoutCancel(ctx), inst.DB, ddl, database)
		return nil, err
	}
	db, err := instance.OpenDatabase(inst.Admin(), database, 2)
	if err != nil {
		return fail(err)
	}
	var res migrations.Result
	err = ddl.Unaccounted(func() (err error) {
		res, err = migrations.Run(ctx, db, src, log)
		return err
	})
	db.Close()
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	s, err := schema.Capture(ctx, inst.DB, database)
	if err != nil {
		return fail(err)
	}
	return &Built{Database: database, Schema: s, Result: res, Capture: time.Since(start)}, nil
}
