package store

import (
	"context"
	"database/sql"
)

// DB is what the store needs from *sql.DB or *sql.Tx.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Store reads and writes users and posts.
type Store struct {
	db DB
}

// New returns a store over db.
func New(db DB) *Store { return &Store{db: db} }

// CreateUser adds a user and returns its id.
func (s *Store) CreateUser(ctx context.Context, email, name string) (int64, error) {
	res, err := s.db.ExecContext(ctx, "INSERT INTO users (email, name) VALUES (?, ?)", email, name)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// Publish adds a post; triggers count it and audit it.
func (s *Store) Publish(ctx context.Context, userID int64, title string) (int64, error) {
	res, err := s.db.ExecContext(ctx, "INSERT INTO posts (user_id, title) VALUES (?, ?)", userID, title)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// PostCount returns a user's posts as the post_count function counts them.
func (s *Store) PostCount(ctx context.Context, userID int64) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT post_count(?)", userID).Scan(&n)
	return n, err
}

// DeleteUser removes a user; their posts and comments go with them.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM users WHERE id = ?", id)
	return err
}

// ActiveEmails lists the emails of users with posts (the active_user_emails view).
func (s *Store) ActiveEmails(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT email FROM active_user_emails")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Count returns the rows of a table of the schema.
func (s *Store) Count(ctx context.Context, table string) (int, error) {
	switch table {
	case "users", "posts", "comments", "audit_log", "post_counts":
	default:
		panic("store.Count: unknown table " + table)
	}
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
	return n, err
}
