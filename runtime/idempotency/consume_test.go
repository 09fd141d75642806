package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/idempotency/guardtest"
	"github.com/warrenbus/warren/runtime/topology"
)

// The same message id published twice; the handler's row,
// written through the claim's transaction, exists once. Two handlers run at
// once, so the second delivery may meet the first one's open claim.
func TestConsumeSameMessageTwiceDoesWorkOnce(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		guard := newGuard(t, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
		work := newWorkTable(t, db, d)
		b := newBroker(t, topology.ConsumerSpec{Name: "shipper", Backoff: testLadder, Concurrency: 2})
		var calls atomic.Int32
		b.run(func(ctx context.Context, dl runtime.Delivery, s shipment) error {
			calls.Add(1)
			return work.Do(ctx, dl.MessageID)
		}, runtime.WithGuard(guard))

		env := newEnvelope(t, "o-1")
		b.publish(env)
		b.publish(env)
		c := b.waitFor("both deliveries settled", func(c runtime.Counts) bool {
			return c.Get(runtime.Acked)+c.Get(runtime.DuplicateSkipped)+c.Get(runtime.Retried)+c.Get(runtime.Poisoned) >= 2
		})
		if c.Get(runtime.Acked) != 1 || c.Get(runtime.DuplicateSkipped) != 1 {
			t.Errorf("counts %s; want one acked and one skipped duplicate", formatCounts(c))
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("handler called %d times, want 1", n)
		}
		if n, err := work.Count(context.Background(), env.ID); err != nil || n != 1 {
			t.Errorf("handler's row exists %d times (%v), want once", n, err)
		}
	})
}

// The handler writes its row, then fails. Neither the row
// nor the claim remains (the retry sees neither, from outside its own
// transaction); the retry succeeds and the row exists once.
func TestConsumeHandlerFailureRollsBackWorkAndClaim(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		guard := newGuard(t, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
		work := newWorkTable(t, db, d)
		claims := claimCounter(db, d, guard.Table())
		b := newBroker(t, topology.ConsumerSpec{Name: "shipper", Backoff: testLadder})
		type seen struct{ attempt, rows, claims int }
		var mu sync.Mutex
		var observed []seen
		b.run(func(ctx context.Context, dl runtime.Delivery, s shipment) error {
			rows, err := work.Count(ctx, dl.MessageID)
			if err != nil {
				return runtime.Permanent(err)
			}
			n, err := claims(ctx, dl.MessageID)
			if err != nil {
				return runtime.Permanent(err)
			}
			mu.Lock()
			observed = append(observed, seen{dl.Attempt, rows, n})
			mu.Unlock()
			if err := work.Do(ctx, dl.MessageID); err != nil {
				return runtime.Permanent(err)
			}
			if dl.Attempt == 1 {
				return errors.New("carrier API unavailable")
			}
			return nil
		}, runtime.WithGuard(guard))

		env := newEnvelope(t, "o-2")
		b.publish(env)
		c := b.waitFor("the message settled", func(c runtime.Counts) bool {
			return c.Get(runtime.Acked)+c.Get(runtime.Poisoned)+c.Get(runtime.DuplicateSkipped) >= 1
		})
		if c.Get(runtime.Retried) != 1 || c.Get(runtime.Acked) != 1 || c.Get(runtime.Poisoned)+c.Get(runtime.DuplicateSkipped) != 0 {
			t.Errorf("counts %s; want one retry, then acked", formatCounts(c))
		}
		mu.Lock()
		got := fmt.Sprint(observed)
		mu.Unlock()
		// Each attempt saw no committed row and no committed claim: the
		// failed first attempt left nothing behind.
		if want := fmt.Sprint([]seen{{1, 0, 0}, {2, 0, 0}}); got != want {
			t.Errorf("attempts saw {attempt rows claims} %s, want %s", got, want)
		}
		if n, err := work.Count(context.Background(), env.ID); err != nil || n != 1 {
			t.Errorf("handler's row exists %d times (%v), want once", n, err)
		}
		if n, err := claims(context.Background(), env.ID); err != nil || n != 1 {
			t.Errorf("claim exists %d times (%v), want once", n, err)
		}
	})
}

// With the database unreachable, every attempt fails before the handler
// runs; a store error is an outage, not a fault of the message, so the
// message waits in the delay queue without spending an attempt: never
// acked, retried, skipped as a duplicate or poisoned.
func TestConsumeStoreDownHoldsTheMessage(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(t *testing.T) (*sql.DB, idempotency.Dialect)
	}{
		{"postgres unreachable", func(t *testing.T) (*sql.DB, idempotency.Dialect) {
			// Nothing listens on port 1: every connection attempt is refused.
			return testenv.OpenDB(t, "pgx", "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"), idempotency.Postgres
		}},
		{"sqlite closed", func(t *testing.T) (*sql.DB, idempotency.Dialect) {
			db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "claims.db"))
			db.Close()
			return db, idempotency.SQLite
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, d := c.open(t)
			guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: d})
			if err != nil {
				t.Fatal(err)
			}
			// Two attempts: spending them would poison the message at once.
			b := newBroker(t, topology.ConsumerSpec{Name: "shipper", Backoff: []time.Duration{20 * time.Millisecond}, MaxAttempts: 2})
			var calls atomic.Int32
			b.run(func(context.Context, runtime.Delivery, shipment) error {
				calls.Add(1)
				return nil
			}, runtime.WithGuard(guard))
			b.publish(newEnvelope(t, "o-3"))
			counts := b.waitFor("held three times", func(c runtime.Counts) bool {
				return c.Get(runtime.Held) >= 3 || c.Get(runtime.Acked)+c.Get(runtime.Retried)+c.Get(runtime.Poisoned)+c.Get(runtime.DuplicateSkipped) > 0
			})
			if counts.Get(runtime.Acked) != 0 || counts.Get(runtime.Retried) != 0 || counts.Get(runtime.Poisoned) != 0 || counts.Get(runtime.DuplicateSkipped) != 0 {
				t.Errorf("counts %s; want the message held only", formatCounts(counts))
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("handler called %d times with the store down, want 0", n)
			}
			if n := b.poisonDepth(); n != 0 {
				t.Errorf("poison queue holds %d messages, want 0", n)
			}
		})
	}
}

// claimCounter returns a function that counts the committed claims of a
// message id, from outside any claim's transaction.
func claimCounter(db *sql.DB, d idempotency.Dialect, table string) func(ctx context.Context, id string) (int, error) {
	p := "?"
	if d == idempotency.Postgres {
		p = "$1"
	}
	q := fmt.Sprintf(`SELECT count(*) FROM "%s" WHERE message_id = %s`, table, p)
	return func(ctx context.Context, id string) (int, error) {
		var n int
		err := db.QueryRowContext(ctx, q, id).Scan(&n)
		return n, err
	}
}

// Both guards plug into the runtime and into the conformance suite.
var (
	_ runtime.Guard   = (*idempotency.SQLGuard)(nil)
	_ runtime.Guard   = (*idempotency.MemoryGuard)(nil)
	_ guardtest.Guard = (*idempotency.SQLGuard)(nil)
	_ guardtest.Guard = (*idempotency.MemoryGuard)(nil)
)
