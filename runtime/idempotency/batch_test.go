package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
)

// Both guards claim batches.
var (
	_ runtime.BatchGuard = (*idempotency.SQLGuard)(nil)
	_ runtime.BatchGuard = (*idempotency.MemoryGuard)(nil)
)

// countingDB counts the statements that insert claims, run in the
// guard's transactions.
type countingDB struct {
	sqldb.DB
	claims atomic.Int32
}

func (c *countingDB) BeginTx(ctx context.Context, opts sqldb.TxOptions) (sqldb.Tx, error) {
	tx, err := c.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{tx, c}, nil
}

type countingTx struct {
	sqldb.Tx
	db *countingDB
}

func (t countingTx) QueryContext(ctx context.Context, q string, args ...any) (sqldb.Rows, error) {
	if strings.HasPrefix(q, "INSERT INTO") {
		t.db.claims.Add(1)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

func (t countingTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if strings.HasPrefix(q, "INSERT INTO") && strings.Contains(q, "claimed_at") {
		t.db.claims.Add(1)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

// RunBatch claims a batch in one statement, in the transaction fn writes
// in: a fact claimed before is a duplicate fn never sees, the claims of
// the facts fn reports failed are let go, and the rest commit with fn's
// writes.
func TestRunBatchClaimsOnceAndLetsFailedClaimsGo(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		counting := &countingDB{DB: sqldb.FromSQL(db)}
		guard, err := idempotency.NewSQLGuardDB(counting, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
		if err != nil {
			t.Fatal(err)
		}
		if err := guard.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		testenv.DropTable(t, db, guard.Table())
		work := newWorkTable(t, db, d)
		claims := claimCounter(db, d, guard.Table())
		ctx := context.Background()
		if _, err := guard.Run(ctx, "loader", "b", func(ctx context.Context) error { return work.Do(ctx, "b") }); err != nil {
			t.Fatal(err)
		}
		counting.claims.Store(0)
		var saw []string
		dups, err := guard.RunBatch(ctx, "loader", []string{"a", "b", "c", "d"}, func(ctx context.Context, fresh []string) ([]string, error) {
			saw = fresh
			for _, id := range []string{"a", "d"} {
				if err := work.Do(ctx, id); err != nil {
					return nil, err
				}
			}
			return []string{"c"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(saw, []string{"a", "c", "d"}) || !slices.Equal(dups, []string{"b"}) {
			t.Errorf("fn saw %v and duplicates are %v; want [a c d] and [b]", saw, dups)
		}
		if n := counting.claims.Load(); n != 1 {
			t.Errorf("the batch's claims took %d statements, want 1", n)
		}
		for id, want := range map[string]int{"a": 1, "b": 1, "c": 0, "d": 1} {
			if n, err := claims(ctx, id); err != nil || n != want {
				t.Errorf("claims of %s: %d (%v), want %d", id, n, err, want)
			}
			if n, err := work.Count(ctx, id); err != nil || n != want {
				t.Errorf("work rows of %s: %d (%v), want %d", id, n, err, want)
			}
		}
		// An error from fn rolls back every claim and write of the batch.
		failure := errors.New("warehouse refused the batch")
		_, err = guard.RunBatch(ctx, "loader", []string{"c", "e"}, func(ctx context.Context, fresh []string) ([]string, error) {
			if err := work.Do(ctx, "e"); err != nil {
				return nil, err
			}
			return nil, failure
		})
		if !errors.Is(err, failure) {
			t.Errorf("err = %v, want fn's", err)
		}
		for _, id := range []string{"c", "e"} {
			if n, _ := claims(ctx, id); n != 0 {
				t.Errorf("claims of %s after a failed batch: %d, want 0", id, n)
			}
			if n, _ := work.Count(ctx, id); n != 0 {
				t.Errorf("work rows of %s after a failed batch: %d, want 0", id, n)
			}
		}
	})
}

// runBatch starts a batch consumer of the test's queue, with handle and
// opts, on conn; it stops when the test ends or stop is called.
func (b *broker) runBatch(conn *runtime.Conn, handle runtime.BatchFunc[shipments], opts ...runtime.ConsumerOption) (stop func()) {
	b.t.Helper()
	c, err := runtime.NewBatchConsumer(conn, b.consumer, []runtime.Route{
		runtime.Collect(factShipped, func(s *shipments, it runtime.Item[shipment]) { s.items = append(s.items, it) }),
	}, handle, opts...)
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	b.t.Cleanup(stop)
	return stop
}

type shipments struct{ items []runtime.Item[shipment] }

// A batch consumer with the guard: each fact's row is written in the
// claims' transaction, a fact published twice is done once, and a fact
// that fails leaves no row and no claim, so its retry does it once.
func TestBatchConsumerWithGuardDoesEachFactOnce(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		guard := newGuard(t, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
		work := newWorkTable(t, db, d)
		b := newBroker(t, topology.ConsumerSpec{Name: "loader", Backoff: testLadder, Batch: &topology.Batch{Size: 10, Wait: 200 * time.Millisecond}})
		envs := []runtime.Envelope{newEnvelope(t, "o-1"), newEnvelope(t, "o-2"), newEnvelope(t, "o-3")}
		for _, env := range envs {
			b.publish(env)
		}
		b.publish(envs[0]) // the same message id again
		var calls atomic.Int32
		b.runBatch(b.conn, func(ctx context.Context, batch shipments) (runtime.Outcomes, error) {
			calls.Add(1)
			out := runtime.Outcomes{}
			for _, it := range batch.items {
				if it.Fact.Order == "o-2" && it.Delivery.Attempt == 1 {
					out.Fail(it.Delivery.MessageID, errors.New("carrier API unavailable"))
					continue
				}
				if err := work.Do(ctx, it.Delivery.MessageID); err != nil {
					return nil, err
				}
				out.Done(it.Delivery.MessageID)
			}
			return out, nil
		}, runtime.WithGuard(guard))
		c := b.waitFor("every fact settled", func(c runtime.Counts) bool {
			return c.Get(runtime.Acked) >= 3 && c.Get(runtime.Acked)+c.Get(runtime.DuplicateSkipped) >= 4
		})
		if c.Get(runtime.Acked) != 3 || c.Get(runtime.DuplicateSkipped) != 1 || c.Get(runtime.Retried) != 1 || c.Get(runtime.Poisoned) != 0 {
			t.Errorf("counts %s; want 3 acked, 1 duplicate skipped, 1 retried", formatCounts(c))
		}
		claims := claimCounter(db, d, guard.Table())
		for _, env := range envs {
			if n, err := work.Count(context.Background(), env.ID); err != nil || n != 1 {
				t.Errorf("row of %s exists %d times (%v), want once", env.ID, n, err)
			}
			if n, err := claims(context.Background(), env.ID); err != nil || n != 1 {
				t.Errorf("claim of %s exists %d times (%v), want once", env.ID, n, err)
			}
		}
	})
}

// A consumer that dies in the middle of a batch loses nothing and does
// nothing twice: dying before the commit leaves neither rows nor claims,
// and the next consumer does every fact; dying after the commit but before
// the acks leaves the facts done, and the next consumer skips them.
func TestBatchCrashWithGuardLosesNothingAndDoesNothingTwice(t *testing.T) {
	for _, when := range []string{"before commit", "after commit"} {
		t.Run(when, func(t *testing.T) {
			forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
				guard := newGuard(t, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("warren_claims")})
				work := newWorkTable(t, db, d)
				b := newBroker(t, topology.ConsumerSpec{Name: "loader", Backoff: testLadder, Batch: &topology.Batch{Size: 5, Wait: 200 * time.Millisecond}})
				var envs []runtime.Envelope
				for i := range 5 {
					env := newEnvelope(t, fmt.Sprintf("o-%d", i))
					envs = append(envs, env)
					b.publish(env)
				}
				first := b.dial()
				inBatch, died := make(chan struct{}), make(chan struct{})
				var once sync.Once
				die := func(ctx context.Context) {
					once.Do(func() { close(inBatch) })
					<-ctx.Done() // the connection is gone: the handlers' ctx ends
					close(died)
				}
				var g runtime.BatchGuard = guard
				if when == "after commit" {
					g = dyingAfterCommit{SQLGuard: guard, committed: die}
				}
				stopFirst := b.runBatch(first, func(ctx context.Context, batch shipments) (runtime.Outcomes, error) {
					for _, it := range batch.items {
						if err := work.Do(ctx, it.Delivery.MessageID); err != nil {
							return nil, err
						}
					}
					if when == "before commit" {
						die(ctx) // the transaction never commits
						return nil, ctx.Err()
					}
					return nil, nil
				}, runtime.WithGuard(g))
				<-inBatch
				go first.Close()
				<-died
				stopFirst()

				var facts atomic.Int32
				second := b.dial()
				b.conn = second
				b.runBatch(second, func(ctx context.Context, batch shipments) (runtime.Outcomes, error) {
					for _, it := range batch.items {
						facts.Add(1)
						if err := work.Do(ctx, it.Delivery.MessageID); err != nil {
							return nil, err
						}
					}
					return nil, nil
				}, runtime.WithGuard(guard))
				c := b.waitFor("every fact settled by the second consumer", func(c runtime.Counts) bool {
					return c.Get(runtime.Acked)+c.Get(runtime.DuplicateSkipped) >= 5
				})
				wantDone, wantSkipped := 5, 0
				if when == "after commit" {
					wantDone, wantSkipped = 0, 5
				}
				if int(facts.Load()) != wantDone || int(c.Get(runtime.DuplicateSkipped)) != wantSkipped {
					t.Errorf("second consumer handled %d facts and skipped %d (counts %s), want %d and %d",
						facts.Load(), c.Get(runtime.DuplicateSkipped), formatCounts(c), wantDone, wantSkipped)
				}
				for _, env := range envs {
					if n, err := work.Count(context.Background(), env.ID); err != nil || n != 1 {
						t.Errorf("row of %s exists %d times (%v), want once", env.ID, n, err)
					}
				}
			})
		})
	}
}

// dyingAfterCommit is a guard whose consumer dies once the batch's claims
// and work committed, before the runtime acks: committed blocks until the
// handlers' ctx ends, which it does when the connection goes.
type dyingAfterCommit struct {
	*idempotency.SQLGuard
	committed func(ctx context.Context)
}

func (g dyingAfterCommit) RunBatch(ctx context.Context, consumer string, ids []string, fn func(context.Context, []string) ([]string, error)) ([]string, error) {
	dups, err := g.SQLGuard.RunBatch(ctx, consumer, ids, fn)
	if err == nil {
		g.committed(ctx)
	}
	return dups, err
}

// With the claims' database gone, a batch's facts are held, never
// handled, retried or poisoned: a store error is an outage.
func TestBatchConsumerStoreDownHoldsTheBatch(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "claims.db"))
	db.Close()
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.SQLite})
	if err != nil {
		t.Fatal(err)
	}
	b := newBroker(t, topology.ConsumerSpec{Name: "loader", Backoff: []time.Duration{20 * time.Millisecond}, MaxAttempts: 2,
		Batch: &topology.Batch{Size: 3, Wait: 100 * time.Millisecond}})
	for i := range 3 {
		b.publish(newEnvelope(t, fmt.Sprintf("o-%d", i)))
	}
	var calls atomic.Int32
	b.runBatch(b.conn, func(context.Context, shipments) (runtime.Outcomes, error) {
		calls.Add(1)
		return nil, nil
	}, runtime.WithGuard(guard))
	c := b.waitFor("every fact held twice", func(c runtime.Counts) bool {
		return c.Get(runtime.Held) >= 6 || c.Get(runtime.Acked)+c.Get(runtime.Retried)+c.Get(runtime.Poisoned)+c.Get(runtime.DuplicateSkipped) > 0
	})
	if c.Get(runtime.Acked)+c.Get(runtime.Retried)+c.Get(runtime.Poisoned)+c.Get(runtime.DuplicateSkipped) != 0 {
		t.Errorf("counts %s; want the facts held only", formatCounts(c))
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler called %d times with the store down, want 0", n)
	}
}
