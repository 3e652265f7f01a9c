package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd"
	"github.com/testdbd/testdbd/internal/random"
)

// Account is a MySQL account with privileges on one database only.
type Account struct {
	User     string
	Password string
	Database string
}

// Create makes an account named prefix plus random characters, with a
// random password and ALL PRIVILEGES on database (no GRANT OPTION, nothing
// on any other schema), allowed at most maxConns connections at once (0:
// no cap of its own). db must be an administrative pool.
func Create(ctx context.Context, db *sql.DB, prefix, database string, maxConns int) (Account, error) {
	opts := ""
	if maxConns > 0 {
		opts = fmt.Sprintf(" WITH MAX_USER_CONNECTIONS %d", maxConns)
	}
	return create(ctx, db, prefix, database, opts)
}

// SetMaxConnections changes how many connections user may have at once.
func SetMaxConnections(ctx context.Context, db *sql.DB, user string, n int) error {
	if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER USER %s WITH MAX_USER_CONNECTIONS %d", Quote(user), n)); err != nil {
		return fmt.Errorf("cap the connections of %s: %w", user, err)
	}
	return nil
}

// CreateOwner makes a database's owner: an account like Create's that
// cannot log in (ACCOUNT LOCK). It is the definer of the database's views,
// triggers, routines and events, which then run with its privileges: on
// that database only.
func CreateOwner(ctx context.Context, db *sql.DB, prefix, database string) (Account, error) {
	return create(ctx, db, prefix, database, " ACCOUNT LOCK")
}

func create(ctx context.Context, db *sql.DB, prefix, database, options string) (Account, error) {
	a := Account{User: prefix + random.String(12, random.LowerAlnum), Password: random.String(24, random.Alnum), Database: database}
	q := fmt.Sprintf("CREATE USER %s IDENTIFIED BY '%s'%s; GRANT ALL PRIVILEGES ON %s.* TO %s",
		Quote(a.User), a.Password, options, GrantName(database), Quote(a.User))
	if _, err := db.ExecContext(ctx, q); err != nil {
		_ = Drop(context.WithoutCancel(ctx), db, a.User)
		return Account{}, fmt.Errorf("create user for %s: %w", database, err)
	}
	return a, nil
}

// Rotate gives user, which EndSessions locked, a new random password and
// unlocks it, with a connection cap of maxConns again (0: none of its
// own): the account of a database's next lease, at a fraction of the cost
// of dropping the old account and creating a new one. The old password
// stops working before anyone can log in again.
func Rotate(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, user, database string, maxConns int) (Account, error) {
	a := Account{User: user, Password: random.String(24, random.Alnum), Database: database}
	q := fmt.Sprintf("ALTER USER %s IDENTIFIED BY '%s' WITH MAX_USER_CONNECTIONS %d ACCOUNT UNLOCK", Quote(user), a.Password, maxConns)
	if _, err := db.ExecContext(ctx, q); err != nil {
		return Account{}, fmt.Errorf("new password for %s: %w", user, err)
	}
	return a, nil
}

// Drop drops an account if it exists. Its open sessions keep running until
// EndSessions ends them.
func Drop(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, user string) error {
	if _, err := db.ExecContext(ctx, "DROP USER IF EXISTS "+Quote(user)); err != nil {
		return fmt.Errorf("drop user %s: %w", user, err)
	}
	return nil
}

// Login connects once over TCP to host:port as a, so that the account's
// first real connection finds the server's caches warm, and checks that the
// credentials work.
func Login(ctx context.Context, host string, port int, a Account) error {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(port))
	cfg.User, cfg.Passwd, cfg.DBName = a.User, a.Password, a.Database
	cfg.Timeout = 5 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("log in as the new user of %s: %w", a.Database, err)
	}
	return nil
}

// Quote returns the account name for SQL; names are generated (letters and
// digits), so quoting them as literals is safe.
func Quote(user string) string { return "'" + user + "'@'%'" }

// GrantName quotes a database name for GRANT, where '_' and '%' are
// wildcards.
func GrantName(db string) string {
	return "`" + grantEscaper.Replace(db) + "`"
}

// EndSessions ends every session of user and waits until they are gone, so
// that their transactions are rolled back and their locks released. It
// returns how many sessions there were. With lock, the account is locked
// first, in the same round trip, so that no new session starts until
// Unlock.
func EndSessions(ctx context.Context, conn *sql.Conn, flavor testdbd.Flavor, user string, lock bool) (int, error) {
	lit := "'" + strings.ReplaceAll(user, "'", "''") + "'"
	var n int
	if lock && flavor != testdbd.MariaDB {
		if _, err := conn.ExecContext(ctx, "ALTER USER "+Quote(user)+" ACCOUNT LOCK"); err != nil {
			return 0, fmt.Errorf("lock user %s: %w", user, err)
		}
	}
	if flavor == testdbd.MariaDB {
		q := "KILL HARD CONNECTION USER " + lit
		if lock {
			q = "ALTER USER " + Quote(user) + " ACCOUNT LOCK; " + q
		}
		res, err := conn.ExecContext(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("end sessions of %s: %w", user, err)
		}
		affected, _ := res.RowsAffected()
		n = int(affected)
	} else {
		ids, err := sessionIDs(ctx, conn, user)
		if err != nil {
			return 0, fmt.Errorf("end sessions of %s: %w", user, err)
		}
		for _, id := range ids {
			if _, err := conn.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10)); err != nil && !isNoSuchThread(err) {
				return 0, fmt.Errorf("end session %d of %s: %w", id, user, err)
			}
		}
		n = len(ids)
	}
	if n == 0 {
		return 0, nil
	}
	// KILL only flags the sessions; wait until they have rolled back and gone.
	deadline := time.Now().Add(30 * time.Second)
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case <-time.After(200 * time.Microsecond):
			}
		}
		ids, err := sessionIDs(ctx, conn, user)
		if err != nil {
			return n, err
		}
		left := len(ids)
		if left == 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, testdbd.Errorf(testdbd.ETimeout, "%d sessions of %s did not end within 30 s of KILL", left, user)
		}
	}
}

// Unlock lets user log in again after EndSessions locked it.
func Unlock(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, user string) error {
	if _, err := db.ExecContext(ctx, "ALTER USER "+Quote(user)+" ACCOUNT UNLOCK"); err != nil {
		return fmt.Errorf("unlock user %s: %w", user, err)
	}
	return nil
}

// isNoSuchThread reports ER_NO_SUCH_THREAD (1094): the session ended by
// itself between the listing and the KILL.
func isNoSuchThread(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1094
}

// sessionIDs lists the ids of user's sessions (killed ones included, until
// they are gone). SHOW PROCESSLIST lists the server's sessions as
// information_schema.PROCESSLIST does, for a sixth of the server's CPU time
// (no temporary table is filled); the filter by user is done here. An
// empty list, which should hold at least the asking session, is not
// trusted (MySQL with performance_schema_show_processlist on and the
// Performance Schema off lists nothing): information_schema.PROCESSLIST
// answers then.
func sessionIDs(ctx context.Context, conn *sql.Conn, user string) ([]int64, error) {
	ids, seen, err := listSessions(ctx, conn, user)
	if err != nil || seen > 0 {
		return ids, err
	}
	rows, err := conn.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// listSessions is SHOW PROCESSLIST's answer to sessionIDs, and how many
// sessions it listed in all.
func listSessions(ctx context.Context, conn *sql.Conn, user string) (ids []int64, seen int, err error) {
	rows, err := conn.QueryContext(ctx, "SHOW PROCESSLIST")
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, 0, err
	}
	// Id and User come first on every supported server; the other columns
	// vary (MariaDB adds Progress).
	if len(cols) < 2 || !strings.EqualFold(cols[0], "Id") || !strings.EqualFold(cols[1], "User") {
		return nil, 0, fmt.Errorf("SHOW PROCESSLIST: unexpected columns %v", cols)
	}
	dest := make([]any, len(cols))
	var id int64
	var name sql.NullString
	dest[0], dest[1] = &id, &name
	for i := 2; i < len(dest); i++ {
		dest[i] = new(sql.RawBytes)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		seen++
		if name.Valid && name.String == user {
			ids = append(ids, id)
		}
	}
	return ids, seen, rows.Err()
}

// grantEscaper is GrantName's, built once.
var grantEscaper = strings.NewReplacer("`", "``", "_", `\_`, "%", `\%`)
