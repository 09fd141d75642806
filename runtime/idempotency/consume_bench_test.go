package idempotency_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/topology"
)

// BenchmarkConsume measures consume throughput of one consumer (concurrency
// 4) on the real broker, with and without a guard, in the same run. Each
// iteration is one message; b.N messages are published before the timer
// starts, then the consumer drains them.
//
//   - no-guard/noop: the handler does nothing; the runtime's own ceiling.
//   - no-guard/own-tx: the handler writes one PostgreSQL row in a
//     transaction of its own; the baseline for the guard.
//   - postgres-guard: the same row written through the PostgreSQL guard's
//     transaction, which also holds the claim.
//   - sqlite-guard, memory-guard: for comparison.
func BenchmarkConsume(b *testing.B) {
	pg := testenv.OpenDB(b, "pgx", testenv.PGDSN(b))
	pgGuard := newGuard(b, pg, idempotency.SQLConfig{Dialect: idempotency.Postgres, Table: testenv.TableName("warren_claims")})
	pgWork := newWorkTable(b, pg, idempotency.Postgres)
	lite := testenv.OpenDB(b, "sqlite", "file:"+filepath.Join(b.TempDir(), "bench.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	liteGuard := newGuard(b, lite, idempotency.SQLConfig{Dialect: idempotency.SQLite, Table: testenv.TableName("warren_claims")})
	liteWork := newWorkTable(b, lite, idempotency.SQLite)

	throughTx := func(w *workTable) func(ctx context.Context, d runtime.Delivery, s shipment) error {
		return func(ctx context.Context, d runtime.Delivery, s shipment) error { return w.Do(ctx, d.MessageID) }
	}
	for _, c := range []struct {
		name   string
		handle func(ctx context.Context, d runtime.Delivery, s shipment) error
		opts   []runtime.ConsumerOption
	}{
		{"no-guard/noop", func(context.Context, runtime.Delivery, shipment) error { return nil }, nil},
		{"no-guard/own-tx", func(ctx context.Context, d runtime.Delivery, s shipment) error {
			return ownTx(ctx, pg, pgWork, d.MessageID)
		}, nil},
		{"postgres-guard", throughTx(pgWork), []runtime.ConsumerOption{runtime.WithGuard(pgGuard)}},
		{"sqlite-guard", throughTx(liteWork), []runtime.ConsumerOption{runtime.WithGuard(liteGuard)}},
		{"memory-guard", func(context.Context, runtime.Delivery, shipment) error { return nil },
			[]runtime.ConsumerOption{runtime.WithGuard(idempotency.NewMemoryGuard(idempotency.MemoryConfig{}))}},
	} {
		b.Run(c.name, func(b *testing.B) {
			br := newBroker(b, topology.ConsumerSpec{Name: "bench", Concurrency: 4, Backoff: testLadder})
			br.publishMany(b.N)
			b.ResetTimer()
			start := time.Now()
			br.run(c.handle, c.opts...)
			counts := br.waitFor("every message acked", func(c runtime.Counts) bool {
				return c.Get(runtime.Acked)+c.Get(runtime.Retried)+c.Get(runtime.Poisoned) >= uint64(b.N)
			})
			elapsed := time.Since(start)
			b.StopTimer()
			if counts.Get(runtime.Acked) != uint64(b.N) {
				b.Fatalf("counts %s; want %d acked", formatCounts(counts), b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// ownTx writes the work row in a transaction of the handler's own.
func ownTx(ctx context.Context, db *sql.DB, w *workTable, key string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, w.insert, key); err != nil {
		return err
	}
	return tx.Commit()
}

// publishMany publishes n distinct facts, several at a time (confirms are
// pipelined).
func (b *broker) publishMany(n int) {
	b.t.Helper()
	p, err := runtime.NewPublisher(b.conn, b.events)
	if err != nil {
		b.t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const publishers = 16
	errs := make(chan error, publishers)
	var wg sync.WaitGroup
	for w := range publishers {
		wg.Go(func() {
			for i := w; i < n; i += publishers {
				if _, err := p.Publish(ctx, factShipped, shipment{Order: "o"}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.t.Fatal(err)
	}
}
