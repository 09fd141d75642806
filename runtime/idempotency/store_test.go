package idempotency_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/idempotency/guardtest"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

func TestMemoryGuardConformance(t *testing.T) {
	guardtest.Run(t, func(t *testing.T, now func() time.Time) guardtest.Instance {
		return guardtest.Instance{Guard: idempotency.NewMemoryGuard(idempotency.MemoryConfig{Now: now})}
	}, guardtest.Features{})
}

func TestPostgresGuardConformance(t *testing.T) {
	dsn := testenv.PGDSN(t)
	guardtest.Run(t, sqlStore(idempotency.Postgres, func(t *testing.T) *sql.DB {
		return testenv.OpenDB(t, "pgx", dsn)
	}), guardtest.Features{Transactional: true, SharedStore: true})
}

// TestPgxGuardConformance: the guard over a pgx pool passes the same
// suite, its handlers writing through the pgx.Tx that TxAs hands back.
func TestPgxGuardConformance(t *testing.T) {
	dsn := testenv.PGDSN(t)
	guardtest.Run(t, func(t *testing.T, now func() time.Time) guardtest.Instance {
		db := testenv.OpenDB(t, "pgx", dsn) // the tests' own reads and the tables' cleanup
		table := testenv.TableName("warren_claims")
		cfg := idempotency.SQLConfig{Dialect: idempotency.Postgres, Table: table, Now: now}
		g, err := idempotency.NewSQLGuardDB(pgxdb.FromPool(openPool(t, dsn)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		testenv.DropTable(t, db, g.Table())
		peer, err := idempotency.NewSQLGuardDB(pgxdb.FromPool(openPool(t, dsn)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		w := newWorkTable(t, db, idempotency.Postgres)
		return guardtest.Instance{Guard: g, Peer: peer, Work: pgxWork{w}}
	}, guardtest.Features{Transactional: true, SharedStore: true})
}

// pgxWork writes the work through the claim's pgx.Tx.
type pgxWork struct{ *workTable }

func (w pgxWork) Do(ctx context.Context, key string) error {
	if _, ok := idempotency.Tx(ctx); ok {
		return fmt.Errorf("work %q: Tx found a *sql.Tx in a pgx guard's context", key)
	}
	tx, ok := idempotency.TxAs[pgx.Tx](ctx)
	if !ok {
		return fmt.Errorf("work %q: no pgx.Tx in the handler's context", key)
	}
	_, err := tx.Exec(ctx, w.insert, key)
	return err
}

// openPool opens a pgx pool that is closed when t ends.
func openPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open pgx pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestSQLiteGuardConformance(t *testing.T) {
	// The busy timeout in the DSN covers opening a connection, whose own
	// pragmas may meet a handler's write lock; the guard sets it again in
	// every transaction it opens.
	for _, c := range []struct{ journal, params string }{
		{"wal", "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"},
		{"delete", ""}, // SQLite's default rollback journal, and no pragma at all
	} {
		t.Run("journal="+c.journal, func(t *testing.T) {
			guardtest.Run(t, func(t *testing.T, now func() time.Time) guardtest.Instance {
				dsn := "file:" + filepath.Join(t.TempDir(), "claims.db") + c.params
				return sqlStore(idempotency.SQLite, func(t *testing.T) *sql.DB {
					return testenv.OpenDB(t, "sqlite", dsn)
				})(t, now)
			}, guardtest.Features{Transactional: true, SharedStore: true})
		})
	}
}

// sqlStore opens guards over a fresh claims table, created by Migrate, and a
// work table the handler writes through the claim's transaction. Guard and
// Peer use separate connection pools (open is called twice).
func sqlStore(d idempotency.Dialect, open func(t *testing.T) *sql.DB) guardtest.Open {
	return func(t *testing.T, now func() time.Time) guardtest.Instance {
		db, peerDB := open(t), open(t)
		table := testenv.TableName("warren_claims")
		cfg := idempotency.SQLConfig{Dialect: d, Table: table, Now: now}
		g := newGuard(t, db, cfg)
		peer, err := idempotency.NewSQLGuard(peerDB, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return guardtest.Instance{Guard: g, Peer: peer, Work: newWorkTable(t, db, d)}
	}
}

// newGuard makes a guard, creates its table and drops it when t ends.
func newGuard(t testing.TB, db *sql.DB, cfg idempotency.SQLConfig) *idempotency.SQLGuard {
	t.Helper()
	g, err := idempotency.NewSQLGuard(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, db, g.Table())
	return g
}

// workTable is the handler's own table: one row per unit of work, written
// through the claim's transaction.
type workTable struct {
	db            *sql.DB
	insert, count string
}

func newWorkTable(t testing.TB, db *sql.DB, d idempotency.Dialect) *workTable {
	t.Helper()
	table := testenv.TableName("warren_work")
	if _, err := db.Exec(`CREATE TABLE "` + table + `" (key TEXT NOT NULL)`); err != nil {
		t.Fatalf("create work table: %v", err)
	}
	testenv.DropTable(t, db, table)
	p := "?"
	if d == idempotency.Postgres {
		p = "$1"
	}
	return &workTable{
		db:     db,
		insert: fmt.Sprintf(`INSERT INTO "%s" (key) VALUES (%s)`, table, p),
		count:  fmt.Sprintf(`SELECT count(*) FROM "%s" WHERE key = %s`, table, p),
	}
}

func (w *workTable) Do(ctx context.Context, key string) error {
	tx, ok := idempotency.Tx(ctx)
	if !ok {
		return fmt.Errorf("work %q: no claim transaction in the handler's context", key)
	}
	if _, ok := idempotency.TxAs[pgx.Tx](ctx); ok {
		return fmt.Errorf("work %q: TxAs found a pgx.Tx in a database/sql guard's context", key)
	}
	_, err := tx.ExecContext(ctx, w.insert, key)
	return err
}

func (w *workTable) Count(ctx context.Context, key string) (int, error) {
	var n int
	err := w.db.QueryRowContext(ctx, w.count, key).Scan(&n)
	return n, err
}
