package bench

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warrenbus/warren/bench/benchevents"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

// BenchmarkBatchConsume drains b.N envelopes, put in the work queue
// untimed, into PostgreSQL with the idempotency guard on (a pgx pool):
//
//   - per-fact: the generated plain consumer, each fact one transaction
//     that claims it and inserts its row;
//   - batch: the generated batch consumer (batches of 100), each batch one
//     transaction that claims its facts in one statement and inserts their
//     rows in one statement.
//
// Both read a quorum queue with prefetch 200 and the same concurrency.
func BenchmarkBatchConsume(b *testing.B) {
	perFact, batch := newEnv(b, "quorum"), newEnv(b, "batch")
	store := newOrderStore(b)
	for _, conc := range []int{1, 4} {
		b.Run(fmt.Sprintf("prefetch=200/concurrency=%d", conc), func(b *testing.B) {
			runSides(b, []side{
				{"per-fact", func(b *testing.B) { perFact.consumeIntoPG(b, store, conc) }},
				{"warren", func(b *testing.B) { batch.consumeBatchIntoPG(b, store, conc) }},
			})
		})
	}
}

// BenchmarkBatchAck drains b.N envelopes with handlers that do nothing:
// the generated batch consumer (batches of 100; each fact decoded,
// validated and acked on its own) against raw amqp091-go that only acks,
// prefetch 200, one handler goroutine. A third side runs the same batch
// consumer with a prefetch of four batches (400), to show what a window
// that refills a batch at a time costs.
func BenchmarkBatchAck(b *testing.B) {
	e := newEnv(b, "batch")
	b.Run("prefetch=200/concurrency=1", func(b *testing.B) {
		runSides(b, []side{
			{"warren", func(b *testing.B) {
				e.consumeBatch(b, 1, func(context.Context, benchevents.BenchBatchBatch) (runtime.Outcomes, error) { return nil, nil })
			}},
			{"amqp091-ack", func(b *testing.B) { e.consumeRaw(b, 200, 1, false) }},
			{"warren-prefetch=400", func(b *testing.B) {
				e.consumeBatch(b, 1, func(context.Context, benchevents.BenchBatchBatch) (runtime.Outcomes, error) { return nil, nil }, runtime.WithPrefetch(400))
			}},
		})
	})
}

// orderStore is the handlers' table and the guard, on the test database.
type orderStore struct {
	pool   *pgxpool.Pool
	guard  *idempotency.SQLGuard
	table  string
	insert string // one row
}

func newOrderStore(b *testing.B) *orderStore {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.PGDSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s := &orderStore{pool: pool, table: testenv.TableName("bench_orders")}
	if _, err := pool.Exec(ctx, `CREATE TABLE "`+s.table+`" (order_id text NOT NULL, total bigint NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP TABLE "`+s.table+`"`) })
	s.insert = `INSERT INTO "` + s.table + `" (order_id, total) VALUES ($1, $2)`
	s.guard, err = idempotency.NewSQLGuardDB(pgxdb.FromPool(pool), idempotency.SQLConfig{Dialect: idempotency.Postgres, Table: testenv.TableName("bench_claims")})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.guard.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP TABLE "`+s.guard.Table()+`"`) })
	return s
}

// reset empties both tables, untimed, so that every run starts alike.
func (s *orderStore) reset(b *testing.B) {
	b.Helper()
	if _, err := s.pool.Exec(context.Background(), `TRUNCATE "`+s.table+`", "`+s.guard.Table()+`"`); err != nil {
		b.Fatal(err)
	}
}

// rows counts the rows written, to check that every fact was done once.
func (s *orderStore) rows(b *testing.B) int {
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM "`+s.table+`"`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// pgHandler inserts each order in the guard's transaction.
type pgHandler struct{ s *orderStore }

func (h pgHandler) HandleOrderPlaced(ctx context.Context, _ runtime.Delivery, o benchevents.OrderPlaced) error {
	tx, ok := idempotency.TxAs[pgx.Tx](ctx)
	if !ok {
		return runtime.Permanent(fmt.Errorf("no claim transaction"))
	}
	_, err := tx.Exec(ctx, h.s.insert, o.OrderID, o.Total.Amount)
	return err
}

func (e *env) consumeIntoPG(b *testing.B, s *orderStore, conc int) {
	b.StopTimer()
	s.reset(b)
	b.StartTimer()
	e.fill(b, b.N, factVersion)
	done := e.acks.arm(b.N)
	m := startMeter(b)
	c, err := benchevents.NewBenchQuorumConsumer(e.conn, pgHandler{s}, runtime.WithPrefetch(200), runtime.WithConcurrency(conc), runtime.WithGuard(s.guard))
	if err != nil {
		b.Fatal(err)
	}
	e.runUntil(b, c, done, m)
	if n := s.rows(b); n != b.N {
		b.Fatalf("%d rows written for %d facts", n, b.N)
	}
}

func (e *env) consumeBatchIntoPG(b *testing.B, s *orderStore, conc int) {
	b.StopTimer()
	s.reset(b)
	b.StartTimer()
	e.consumeBatch(b, conc, func(ctx context.Context, batch benchevents.BenchBatchBatch) (runtime.Outcomes, error) {
		tx, ok := idempotency.TxAs[pgx.Tx](ctx)
		if !ok {
			return nil, runtime.Permanent(fmt.Errorf("no claim transaction"))
		}
		var sql strings.Builder
		fmt.Fprintf(&sql, `INSERT INTO "%s" (order_id, total) VALUES `, s.table)
		args := make([]any, 0, 2*len(batch.OrderPlaced))
		for i, it := range batch.OrderPlaced {
			if i > 0 {
				sql.WriteByte(',')
			}
			fmt.Fprintf(&sql, "($%d, $%d)", 2*i+1, 2*i+2)
			args = append(args, it.Fact.OrderID, it.Fact.Total.Amount)
		}
		_, err := tx.Exec(ctx, sql.String(), args...)
		return nil, err
	}, runtime.WithGuard(s.guard))
	if n := s.rows(b); n != b.N {
		b.Fatalf("%d rows written for %d facts", n, b.N)
	}
}

// consumeBatch drains b.N envelopes with the generated batch consumer.
func (e *env) consumeBatch(b *testing.B, conc int, fn func(context.Context, benchevents.BenchBatchBatch) (runtime.Outcomes, error), opts ...runtime.ConsumerOption) {
	e.fill(b, b.N, factVersion)
	done := e.acks.arm(b.N)
	m := startMeter(b)
	var batches atomic.Int64
	h := batchFunc(func(ctx context.Context, batch benchevents.BenchBatchBatch) (runtime.Outcomes, error) {
		batches.Add(1)
		return fn(ctx, batch)
	})
	c, err := benchevents.NewBenchBatchConsumer(e.conn, h, append(opts, runtime.WithConcurrency(conc))...)
	if err != nil {
		b.Fatal(err)
	}
	e.runUntil(b, c, done, m)
	b.ReportMetric(float64(b.N)/float64(max(batches.Load(), 1)), "facts/batch")
}

type batchFunc func(context.Context, benchevents.BenchBatchBatch) (runtime.Outcomes, error)

func (f batchFunc) HandleBatch(ctx context.Context, b benchevents.BenchBatchBatch) (runtime.Outcomes, error) {
	return f(ctx, b)
}

// runUntil runs c until done closes, stops the meter and then c.
func (e *env) runUntil(b *testing.B, c *runtime.Consumer, done <-chan struct{}, m *meter) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	select {
	case <-done:
	case err := <-ran:
		b.Fatalf("consumer stopped early: %v", err)
	case <-time.After(10 * time.Minute):
		b.Fatal("the consumer did not ack every fact within 10 minutes")
	}
	m.stop()
	cancel()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
}
