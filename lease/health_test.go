package lease

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestTemplateBroken: only a missing database or table that names the
// template database makes the template be built again; the same errors
// naming a worker database, and other errors, do not.
func TestTemplateBroken(t *testing.T) {
	const tpl = "tdb_6f7d1368d453_t1"
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&mysql.MySQLError{Number: 1049, Message: "Unknown database 'tdb_6f7d1368d453_t1'"}, true},
		{&mysql.MySQLError{Number: 1146, Message: "Table 'tdb_6f7d1368d453_t1.users' doesn't exist"}, true},
		{fmt.Errorf("restore users: %w", &mysql.MySQLError{Number: 1146, Message: "Table 'tdb_6f7d1368d453_t1.users' doesn't exist"}), true},
		{&mysql.MySQLError{Number: 1146, Message: "Table 'tdb_6f7d1368d453_w7.users' doesn't exist"}, false},
		{&mysql.MySQLError{Number: 1049, Message: "Unknown database 'tdb_6f7d1368d453_w7'"}, false},
		{&mysql.MySQLError{Number: 1146, Message: "Table 'tdb_6f7d1368d453_t10.users' doesn't exist"}, false},
		{&mysql.MySQLError{Number: 1049, Message: "Unknown database 'tdb_6f7d1368d453_t10'"}, false},
		{&mysql.MySQLError{Number: 1114, Message: "The table 'users' is full"}, false},
		{errors.New("Table 'tdb_6f7d1368d453_t1.users' doesn't exist"), false},
	} {
		if got := templateBroken(c.err, tpl); got != c.want {
			t.Errorf("templateBroken(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
