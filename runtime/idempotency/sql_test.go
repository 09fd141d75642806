package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/idempotency"
)

func TestTableNames(t *testing.T) {
	for _, c := range []struct {
		dialect idempotency.Dialect
		table   string
		wantErr string // "" when the name is accepted
	}{
		{idempotency.Postgres, "warren_idempotency", ""},
		{idempotency.Postgres, "_claims2", ""},
		{idempotency.Postgres, "events.claims", ""},
		{idempotency.SQLite, "claims", ""},
		{idempotency.SQLite, "main.claims", "does not take a schema-qualified name"},
		{idempotency.Postgres, "Claims", "expected lower-case letters"},
		{idempotency.Postgres, `claims"; DROP TABLE users; --`, "expected lower-case letters"},
		{idempotency.Postgres, "claims-1", "expected lower-case letters"},
		{idempotency.Postgres, "1claims", "expected lower-case letters"},
		{idempotency.Postgres, "a.b.c", "expected lower-case letters"},
		{idempotency.Postgres, ".claims", "expected lower-case letters"},
		{idempotency.Postgres, strings.Repeat("x", 49), "longer than 48"},
	} {
		_, err := idempotency.MigrationSQL(c.dialect, c.table)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("MigrationSQL(%s, %q): %v", c.dialect, c.table, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.table))):
			t.Errorf("MigrationSQL(%s, %q) error = %v, want one naming the table and saying %q", c.dialect, c.table, err, c.wantErr)
		}
	}
}

func TestMigrationSQLQuotesNames(t *testing.T) {
	got, err := idempotency.MigrationSQL(idempotency.Postgres, "events.claims")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`CREATE TABLE IF NOT EXISTS "events"."claims" (`,
		`PRIMARY KEY (message_id, consumer)`,
		`CREATE INDEX IF NOT EXISTS "claims_claimed_at_idx" ON "events"."claims" (claimed_at);`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("migration lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "{{") {
		t.Errorf("migration has an unfilled placeholder:\n%s", got)
	}
}

func TestNewSQLGuardRejectsBadConfig(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
	for _, c := range []struct {
		name    string
		db      *sql.DB
		cfg     idempotency.SQLConfig
		wantErr string
	}{
		{"no db", nil, idempotency.SQLConfig{Dialect: idempotency.SQLite}, "nil *sql.DB"},
		{"no dialect", db, idempotency.SQLConfig{}, "no dialect: expected idempotency.Postgres or idempotency.SQLite"},
		{"unknown dialect", db, idempotency.SQLConfig{Dialect: "mysql"}, `dialect "mysql": expected idempotency.Postgres or idempotency.SQLite`},
		{"bad table", db, idempotency.SQLConfig{Dialect: idempotency.SQLite, Table: "x y"}, `table "x y"`},
		{"negative busy timeout", db, idempotency.SQLConfig{Dialect: idempotency.SQLite, BusyTimeout: -time.Second}, "busy timeout -1s"},
	} {
		_, err := idempotency.NewSQLGuard(c.db, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: NewSQLGuard error = %v, want one saying %q", c.name, err, c.wantErr)
		}
	}
	g, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.SQLite})
	if err != nil || g.Table() != idempotency.DefaultTable {
		t.Errorf("NewSQLGuard with defaults = table %q, %v; want %q", g.Table(), err, idempotency.DefaultTable)
	}
}

// TestMigrateTwice: applying the migration again is harmless, and keeps
// the claims already made.
func TestMigrateTwice(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		g := newGuard(t, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
		ctx := context.Background()
		if _, err := g.Run(ctx, "c", "m1", func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := g.Migrate(ctx); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		dup, err := g.Run(ctx, "c", "m1", func(context.Context) error { return nil })
		if err != nil || !dup {
			t.Fatalf("after a second Migrate, Run = %v, %v; want the claim kept (duplicate)", dup, err)
		}
	})
}

// TestMemoryGuardHasNoTx: a handler asking for the transaction learns that
// the memory guard has none, rather than getting a nil one.
func TestMemoryGuardHasNoTx(t *testing.T) {
	g := idempotency.NewMemoryGuard(idempotency.MemoryConfig{})
	_, err := g.Run(context.Background(), "c", "m1", func(ctx context.Context) error {
		if tx, ok := idempotency.Tx(ctx); ok || tx != nil {
			return errors.New("Tx found a transaction in a memory guard's context")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := idempotency.Tx(context.Background()); ok {
		t.Error("Tx found a transaction in a bare context")
	}
}

// TestStoreUnreachable: with the database down, Run reports an error that
// is not the handler's, wraps the cause without the password, and never
// calls the handler.
func TestStoreUnreachable(t *testing.T) {
	unreachable := testenv.OpenDB(t, "pgx", "postgres://postgres:s3cr3t@127.0.0.1:1/test?sslmode=disable&connect_timeout=5")
	closed := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
	closed.Close()
	for name, c := range map[string]struct {
		db      *sql.DB
		dialect idempotency.Dialect
		want    string
	}{
		"postgres refused": {unreachable, idempotency.Postgres, "connect"},
		"closed pool":      {closed, idempotency.SQLite, "database is closed"},
	} {
		t.Run(name, func(t *testing.T) {
			g, err := idempotency.NewSQLGuard(c.db, idempotency.SQLConfig{Dialect: c.dialect})
			if err != nil {
				t.Fatal(err)
			}
			called := false
			dup, err := g.Run(context.Background(), "search-indexer", "m1", func(context.Context) error {
				called = true
				return nil
			})
			if err == nil || dup || called {
				t.Fatalf("Run on an unreachable store = %v, %v, handler called %v; want an error and no call", dup, err, called)
			}
			for _, want := range []string{`consumer "search-indexer"`, `message "m1"`, c.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q shows the database password", err)
			}
			if _, err := g.Prune(context.Background(), 0); err == nil {
				t.Error("Prune on an unreachable store returned no error")
			}
		})
	}
}

// forEachDB runs test once on an SQLite file and once on PostgreSQL (skipped
// locally when the server is down), each pool closed when its subtest ends.
func forEachDB(t *testing.T, test func(t *testing.T, db *sql.DB, d idempotency.Dialect)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "claims.db")), idempotency.SQLite)
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, testenv.OpenDB(t, "pgx", testenv.PGDSN(t)), idempotency.Postgres)
	})
}
