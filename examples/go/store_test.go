package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/testdbd/testdbd/client"
	store "github.com/testdbd/testdbd/examples/go"
)

func TestMain(m *testing.M) {
	if os.Getenv("TESTDBD_ADDR") == "" {
		fmt.Println("skipping: set TESTDBD_ADDR to a testdbd daemon's REST address (make run serves 127.0.0.1:8080)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// options are the helper's settings for every test of the package: the
// daemon from the environment, the template built from the example
// migrations (uploaded once per test binary), and a strategy.
func options(strategy client.Strategy) client.TestOptions {
	return client.TestOptions{
		Addr:          os.Getenv("TESTDBD_ADDR"),
		Token:         os.Getenv("TESTDBD_TOKEN"),
		Template:      "app",
		MigrationsDir: "../migrations",
		Strategy:      strategy,
		Config:        func(c *mysql.Config) { c.ParseTime = true },
	}
}

func TestCreateUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(client.TestDB(t, options(client.StrategySnapshot)))
	id, err := s.CreateUser(ctx, "new@example.com", "New")
	if err != nil {
		t.Fatal(err)
	}
	// Every test starts from the template, AUTO_INCREMENT included, so ids
	// are predictable.
	if id != 4 {
		t.Errorf("id %d, want 4", id)
	}
}

// TestSameEmailEverywhere runs eight tests at once that would collide on a
// shared database: the email column is unique.
func TestSameEmailEverywhere(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			s := store.New(client.TestDB(t, options(client.StrategyTruncate)))
			if _, err := s.CreateUser(context.Background(), "same@example.com", fmt.Sprint("Test ", i)); err != nil {
				t.Fatalf("another test's row is visible here: %v", err)
			}
			if n, err := s.Count(context.Background(), "users"); err != nil || n != 4 {
				t.Errorf("%d users, %v; want 4", n, err)
			}
		})
	}
}

func TestPublishFiresTriggers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(client.TestDB(t, options(client.StrategySnapshot)))
	if _, err := s.Publish(ctx, 3, "Kernels"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PostCount(ctx, 3); err != nil || n != 1 {
		t.Errorf("post_count(3) = %d, %v; want 1", n, err)
	}
	if n, err := s.Count(ctx, "audit_log"); err != nil || n != 3 {
		t.Errorf("%d audit rows, %v; want the template's 2 and this post's", n, err)
	}
	emails, err := s.ActiveEmails(ctx)
	if err != nil || !slices.Contains(emails, "linus@example.com") {
		t.Errorf("active users %v, %v", emails, err)
	}
}

func TestDeleteUserCascades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(client.TestDB(t, options(client.StrategySnapshot)))
	if err := s.DeleteUser(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(ctx, "posts"); err != nil || n != 1 {
		t.Errorf("%d posts, %v; want 1 after the cascade", n, err)
	}
	if n, err := s.Count(ctx, "comments"); err != nil || n != 0 {
		t.Errorf("%d comments, %v; want 0 after the cascade", n, err)
	}
}

// TestInATransaction uses the rollback helper: the test works in a
// transaction that is rolled back, then the daemon rewinds AUTO_INCREMENT
// and checks that nothing was committed.
func TestInATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.New(client.TestTx(t, options(client.StrategyRollback)))
	id, err := s.CreateUser(ctx, "tx@example.com", "Tx")
	if err != nil || id != 4 {
		t.Fatalf("id %d, %v; want 4", id, err)
	}
	if _, err := s.Publish(ctx, id, "Inside a transaction"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PostCount(ctx, id); err != nil || n != 1 {
		t.Errorf("post_count = %d, %v; want 1", n, err)
	}
}
