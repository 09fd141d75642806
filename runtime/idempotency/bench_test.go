package idempotency_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/idempotency"
)

// BenchmarkGuardRun measures what a guard adds to a handler that writes one
// row in a transaction: "plain-tx" is the handler on its own (begin, insert,
// commit), "guard" is the same insert inside guard.Run, which also inserts
// the claim. Compare the two lines of each store, from the same run.
func BenchmarkGuardRun(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		dsn := "file:" + filepath.Join(b.TempDir(), "bench.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		benchGuardRun(b, testenv.OpenDB(b, "sqlite", dsn), idempotency.SQLite)
	})
	b.Run("postgres", func(b *testing.B) {
		benchGuardRun(b, testenv.OpenDB(b, "pgx", testenv.PGDSN(b)), idempotency.Postgres)
	})
	b.Run("memory", func(b *testing.B) {
		b.Run("plain", func(b *testing.B) {
			for b.Loop() {
				_ = func(context.Context) error { return nil }(context.Background())
			}
		})
		b.Run("guard", func(b *testing.B) {
			g := idempotency.NewMemoryGuard(idempotency.MemoryConfig{})
			i := 0
			for b.Loop() {
				i++
				if _, err := g.Run(context.Background(), "bench", fmt.Sprint(i), func(context.Context) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

func benchGuardRun(b *testing.B, db *sql.DB, d idempotency.Dialect) {
	ctx := context.Background()
	g := newGuard(b, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
	work := newWorkTable(b, db, d)
	b.Run("plain-tx", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, work.insert, fmt.Sprint(i)); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guard", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			key := fmt.Sprint(i)
			if _, err := g.Run(ctx, "bench", key, func(ctx context.Context) error { return work.Do(ctx, key) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
