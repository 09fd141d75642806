package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// crashingDB is a DB whose transactions die at their commit, as if the
// relay's process were killed after the broker confirmed the batch and
// before the rows were marked: the commit never happens (rolled back).
type crashingDB struct {
	sqldb.DB
	crashes atomic.Int32
}

func (c *crashingDB) BeginTx(ctx context.Context, opts sqldb.TxOptions) (sqldb.Tx, error) {
	tx, err := c.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return crashingTx{Tx: tx, db: c}, nil
}

type crashingTx struct {
	sqldb.Tx
	db *crashingDB
}

func (t crashingTx) Commit(ctx context.Context) error {
	t.db.crashes.Add(1)
	_ = t.Tx.Rollback(ctx)
	return errors.New("relay killed before its commit")
}

// TestKilledBetweenConfirmAndMark: a relay dies after the broker confirmed
// its batch and before it marked the rows; the next relay publishes the
// same facts again with the same ids, and a consumer behind an
// idempotency guard does each one's work once.
func TestKilledBetweenConfirmAndMark(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *store) {
		ctx := context.Background()
		b := newBroker(t, true)
		ids := s.write(factPlaced, order{ID: "o-1"}, order{ID: "o-2"})

		dying := &crashingDB{DB: s.txDB}
		if n, err := s.relayOn(dying, b.pub, outboxConfig()).RelayOnce(ctx); n != 0 || err == nil || dying.crashes.Load() != 1 {
			t.Fatalf("dying relay: RelayOnce = %d, %v; want its commit to fail", n, err)
		}
		if rows := s.rows(); len(rows) != 2 {
			t.Fatalf("%d rows after the crash; want both kept", len(rows))
		}
		if n, err := s.relay(b.pub, outboxConfig()).RelayOnce(ctx); n != 2 || err != nil {
			t.Fatalf("next relay: RelayOnce = %d, %v; want both published again", n, err)
		}

		// Four deliveries, two per id; the guard lets each id's work run once.
		guard := newClaims(t)
		var work atomic.Int32
		seen := map[string]int{}
		done := make(chan struct{})
		var delivered atomic.Int32
		c, err := runtime.NewConsumer(b.conn, b.top.Consumers[0], []runtime.Route{
			runtime.Handle(factPlaced, func(ctx context.Context, d runtime.Delivery, o order) error {
				work.Add(1)
				return nil
			}),
		}, runtime.WithGuard(guard), runtime.WithMiddleware(func(next runtime.HandlerFunc) runtime.HandlerFunc {
			return func(ctx context.Context, d runtime.Delivery) error {
				err := next(ctx, d)
				seen[d.MessageID]++ // concurrency 1 below: one at a time
				if delivered.Add(1) == 4 {
					close(done)
				}
				return err
			}
		}), runtime.WithConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		go func() { stopped <- c.Run(runCtx) }()
		<-done
		stop()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if seen[id] != 2 {
				t.Errorf("message %s delivered %d times; want twice (the same id both times)", id, seen[id])
			}
		}
		if n := work.Load(); n != 2 {
			t.Errorf("work done %d times; want once per fact", n)
		}
	})
}

func outboxConfig() outbox.RelayConfig { return outbox.RelayConfig{} }

// newClaims is an SQLite idempotency guard of the test's own.
func newClaims(t *testing.T) *idempotency.SQLGuard {
	t.Helper()
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "claims.db"))
	g, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}
