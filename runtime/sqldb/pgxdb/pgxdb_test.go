package pgxdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

// TestFromSQLNeedsPgx: listening over a *sql.DB of another driver is an
// error that says which driver it needs.
func TestFromSQLNeedsPgx(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = pgxdb.FromSQL(db).(sqldb.Listener).Listen(context.Background(), "c")
	if err == nil || !strings.Contains(err.Error(), "github.com/jackc/pgx/v5/stdlib") {
		t.Errorf("Listen over SQLite: %v; want an error naming pgx's driver", err)
	}
}

// TestPoolTransactions: a pool's transactions are pgx.Tx, with the
// isolation asked for, rows affected counted and rollback after commit a
// no-op; a notification sent in a transaction reaches a listener once it
// commits.
func TestPoolTransactions(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.PGDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := pgxdb.FromPool(pool)
	channel := testenv.Name("pgxdb")
	sub, err := db.(sqldb.Listener).Listen(ctx, channel)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	tx, err := db.BeginTx(ctx, sqldb.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tx.Native().(pgx.Tx); !ok {
		t.Fatalf("Native() is a %T, want a pgx.Tx", tx.Native())
	}
	rs, err := tx.QueryContext(ctx, "SHOW transaction_isolation")
	if err != nil {
		t.Fatal(err)
	}
	var iso string
	for rs.Next() {
		if err := rs.Scan(&iso); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Close(); err != nil || iso != "serializable" {
		t.Errorf("isolation %q, %v; want serializable", iso, err)
	}
	res, err := tx.ExecContext(ctx, "SELECT pg_notify($1, '') FROM generate_series(1, 3)", channel)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); n != 3 || err != nil {
		t.Errorf("RowsAffected = %d, %v; want 3", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Errorf("Rollback after Commit: %v; want nothing", err)
	}
	if err := sub.Wait(ctx); err != nil {
		t.Errorf("Wait: %v; want the committed notification", err)
	}
	if _, err := db.BeginTx(ctx, sqldb.TxOptions{Isolation: sql.LevelLinearizable}); err == nil {
		t.Error("BeginTx with an isolation PostgreSQL lacks: no error")
	}
}
