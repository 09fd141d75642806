package golden_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	sagas "github.com/warrenbus/warren/golden/sagas/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// BenchmarkSagaFacts measures facts per second through the checkout saga
// on PostgreSQL (two service instances, concurrency 8 each, five facts per
// order in random order), beside a plain guarded consumer doing the same
// work by hand: in the claim's transaction, lock the order's row (SELECT
// ... FOR UPDATE, inserting it first), add the payment, write it back.
// Each op is one fact.
//
//	go test ./golden -run '^$' -bench BenchmarkSagaFacts -benchtime 5000x
func BenchmarkSagaFacts(b *testing.B) {
	b.Run("saga", func(b *testing.B) { benchFacts(b, true) })
	b.Run("guarded-consumer", func(b *testing.B) { benchFacts(b, false) })
}

func benchFacts(b *testing.B, useSaga bool) {
	url := testenv.VHost(b, "warren-saga-bench")
	pg := testenv.OpenDB(b, "pgx", testenv.PGDSN(b))
	db := sqldb.FromSQL(pg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claims, boxTable, instTable := testenv.TableName("claims"), testenv.TableName("outbox"), testenv.TableName("sagas")
	for _, tb := range []string{claims, boxTable, boxTable + "_seq", boxTable + "_seq_source", instTable} {
		testenv.DropTable(b, pg, tb)
	}
	var handled atomic.Int64
	count := func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(ctx context.Context, d runtime.Delivery) error {
			err := next(ctx, d)
			if err == nil {
				handled.Add(1)
			}
			return err
		}
	}
	var conn *runtime.Conn
	for i := range 2 {
		c, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &sagas.Topology, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		guard, err := idempotency.NewSQLGuardDB(db, idempotency.SQLConfig{Dialect: sqldb.Postgres, Table: claims})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			conn = c
			if err := guard.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
		}
		var consumer *runtime.Consumer
		if useSaga {
			w, err := sagas.NewOutboxWriter(outbox.Config{Dialect: sqldb.Postgres, Table: boxTable})
			if err != nil {
				b.Fatal(err)
			}
			store, err := saga.NewStore(db, saga.Config{Dialect: sqldb.Postgres, Table: instTable, Guard: guard, Outbox: w.Outbox()})
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				if err := w.Outbox().MigrateDB(ctx, db); err != nil {
					b.Fatal(err)
				}
				if err := store.Migrate(ctx); err != nil {
					b.Fatal(err)
				}
			}
			consumer, err = sagas.NewCheckoutSaga(c, store, checkout{}, runtime.WithMiddleware(count))
			if err != nil {
				b.Fatal(err)
			}
		} else {
			if i == 0 {
				if _, err := pg.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %q (id text PRIMARY KEY, total bigint, paid bigint NOT NULL)`, instTable)); err != nil {
					b.Fatal(err)
				}
			}
			consumer, err = runtime.NewConsumer(c, sagas.Topology.Consumers[1], byHand(instTable), runtime.WithGuard(guard), runtime.WithMiddleware(count))
			if err != nil {
				b.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = consumer.Run(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
	}
	pub, err := sagas.NewPublisher(conn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pub.Close() })

	orders := max(1, b.N/5)
	type send struct {
		order  string
		placed bool
	}
	sends := make([]send, 0, b.N)
	for i := range b.N {
		sends = append(sends, send{order: fmt.Sprintf("bench-%d", i%orders), placed: i < orders})
	}
	rand.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
	b.ResetTimer()
	for _, s := range sends {
		if s.placed {
			_, err = pub.PublishOrderPlaced(ctx, sagas.OrderPlaced{OrderID: s.order, TotalCents: 1 << 40})
		} else {
			_, err = pub.PublishOrderPaid(ctx, sagas.OrderPaid{OrderID: s.order, AmountCents: 1})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	testenv.Eventually(b, "every fact to be handled", func() bool { return handled.Load() >= int64(b.N) })
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "facts/s")
}

// byHand is the guarded consumer's work: the order's row, locked in the
// claim's transaction, its total or payment added.
func byHand(table string) []runtime.Route {
	upsert := fmt.Sprintf(`INSERT INTO %q (id, paid) VALUES ($1, 0) ON CONFLICT DO NOTHING`, table)
	lock := fmt.Sprintf(`SELECT paid FROM %q WHERE id = $1 FOR UPDATE`, table)
	setTotal := fmt.Sprintf(`UPDATE %q SET total = $2 WHERE id = $1`, table)
	addPaid := fmt.Sprintf(`UPDATE %q SET paid = paid + $2 WHERE id = $1`, table)
	work := func(ctx context.Context, id, update string, v int64) error {
		tx, ok := idempotency.Tx(ctx)
		if !ok {
			return fmt.Errorf("no claim transaction")
		}
		if _, err := tx.ExecContext(ctx, upsert, id); err != nil {
			return err
		}
		var paid int64
		if err := tx.QueryRowContext(ctx, lock, id).Scan(&paid); err != nil && err != sql.ErrNoRows {
			return err
		}
		_, err := tx.ExecContext(ctx, update, id, v)
		return err
	}
	return []runtime.Route{
		runtime.Handle(sagas.FactOrderPlaced, func(ctx context.Context, _ runtime.Delivery, f sagas.OrderPlaced) error {
			return work(ctx, f.OrderID, setTotal, f.TotalCents)
		}),
		runtime.Handle(sagas.FactOrderPaid, func(ctx context.Context, _ runtime.Delivery, f sagas.OrderPaid) error {
			return work(ctx, f.OrderID, addPaid, f.AmountCents)
		}),
	}
}
