package saga_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

type stepState struct {
	Status string `json:"status"`
}

type stepPlaced struct {
	ID string `json:"id"`
}

var stepFactPlaced = runtime.Fact{RoutingKey: "order.placed", Version: 1}

// stepRun runs a saga "checkout" with the timeout "payment-due" on the
// test kit's bus, in virtual time, its tables in SQLite and its relay on
// the bus: order.placed starts an instance and returns the step that
// placed makes of it; the timeout completes the instance. test publishes
// and looks; fired counts the timeout's handler calls.
func stepRun(t *testing.T, placed func(saga.Step[stepState]) saga.Step[stepState],
	test func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64)) {
	t.Helper()
	stepRunAttempts(t, 1, placed, test)
}

// stepRunAttempts is stepRun with a saga consumer of maxAttempts
// attempts, a minute apart.
func stepRunAttempts(t *testing.T, maxAttempts int, placed func(saga.Step[stepState]) saga.Step[stepState],
	test func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64)) {
	t.Helper()
	var backoff []time.Duration
	for range maxAttempts - 1 {
		backoff = append(backoff, time.Minute)
	}
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "saga.checkout", Bindings: []string{"order.placed", saga.TimeoutFact("checkout").RoutingKey}, MaxAttempts: maxAttempts, Backoff: backoff},
	}})
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "sagas.db")+"?_pragma=busy_timeout(5000)")
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[stepPlaced](b, stepFactPlaced)
		guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: sqldb.SQLite})
		if err != nil {
			t.Fatal(err)
		}
		ob, err := outbox.New(outbox.Config{Dialect: sqldb.SQLite})
		if err != nil {
			t.Fatal(err)
		}
		store, err := saga.NewStore(sqldb.FromSQL(db), saga.Config{Dialect: sqldb.SQLite, Guard: guard, Outbox: ob})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{guard.Migrate(b.Context()), ob.Migrate(b.Context(), db), store.Migrate(b.Context())} {
			if err != nil {
				t.Fatal(err)
			}
		}
		var fired atomic.Int64
		c, err := saga.New(b.Conn(), store, saga.Definition{Name: "checkout"}, top.Consumers[0], []saga.Binding[stepState]{
			saga.On(stepFactPlaced, "/id", saga.Start, saga.Handle, func(_ context.Context, in saga.Instance[stepState], _ stepPlaced) (saga.Step[stepState], error) {
				return placed(saga.Next(stepState{Status: "placed"})), nil
			}),
			saga.OnTimeout("payment-due", func(_ context.Context, in saga.Instance[stepState]) (saga.Step[stepState], error) {
				fired.Add(1)
				return saga.Next(stepState{Status: "unpaid"}).Complete(), nil
			}),
		})
		b.Start("saga.checkout", c, err)
		pub, err := runtime.NewPublisher(b.Conn(), topology.DefaultExchanges.Events)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Dialect: sqldb.SQLite, PollInterval: time.Hour})
		b.Start("relay", relay, err)
		test(t, b, store, ob, db, &fired)
	})
}

// scheduledRows counts the timeouts the outbox holds for later.
func scheduledRows(t *testing.T, ctx context.Context, ob *outbox.Outbox, db *sql.DB) int {
	t.Helper()
	rows, err := ob.Scheduled(ctx, sqldb.FromSQL(db), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// Of a step's Schedule and Cancel of one timeout, the last call wins:
// Schedule then Cancel leaves it cancelled (nothing in the outbox, nothing
// fires), Cancel then Schedule schedules it.
func TestStepLastTimeoutCallWins(t *testing.T) {
	t.Run("schedule then cancel", func(t *testing.T) {
		stepRun(t, func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment-due", 10*time.Millisecond).Cancel("payment-due")
		}, func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64) {
			warrentest.Publish(b, stepFactPlaced, stepPlaced{ID: "o-1"})
			b.Idle()
			if n := scheduledRows(t, b.Context(), ob, db); n != 0 {
				t.Errorf("%d timeouts in the outbox; want none, the last call cancelled it", n)
			}
			b.Advance(time.Hour)
			if n := fired.Load(); n != 0 {
				t.Errorf("payment-due fired %d times; want never", n)
			}
			if st := store.Stats(); st.Started != 1 || st.TimedOut != 0 || st.LateTimeouts != 0 {
				t.Errorf("stats %+v; want 1 started, no timeout fired, none late", st)
			}
		})
	})
	t.Run("cancel then schedule", func(t *testing.T) {
		stepRun(t, func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Cancel("payment-due").Schedule("payment-due", 10*time.Millisecond)
		}, func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64) {
			warrentest.Publish(b, stepFactPlaced, stepPlaced{ID: "o-1"})
			b.Idle()
			b.Advance(10 * time.Millisecond)
			if n := fired.Load(); n != 1 {
				t.Errorf("payment-due fired %d times; want once, at 10ms", n)
			}
			if st := store.Stats(); st.TimedOut != 1 || st.Completed != 1 || st.LateTimeouts != 0 {
				t.Errorf("stats %+v; want the timeout handled once", st)
			}
		})
	})
}

// A timeout scheduled twice in one step is scheduled once, by the last
// call: one outbox row, which fires at its time; the first delay is
// forgotten, not written and counted late.
func TestStepScheduledTwiceKeepsTheLast(t *testing.T) {
	stepRun(t, func(s saga.Step[stepState]) saga.Step[stepState] {
		return s.Schedule("payment-due", 10*time.Millisecond).Schedule("payment-due", time.Hour)
	}, func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64) {
		start := time.Now()
		warrentest.Publish(b, stepFactPlaced, stepPlaced{ID: "o-1"})
		b.Idle()
		rows, err := ob.Scheduled(b.Context(), sqldb.FromSQL(db), "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || !rows[0].DueAt.Equal(start.Add(time.Hour)) {
			t.Fatalf("scheduled %+v; want one timeout, due in an hour (%s)", rows, start.Add(time.Hour))
		}
		b.Advance(time.Hour - time.Millisecond)
		if st := store.Stats(); fired.Load() != 0 || st.LateTimeouts != 0 {
			t.Errorf("before the hour: fired %d, stats %+v; want nothing fired and no late timeout", fired.Load(), st)
		}
		b.Advance(time.Millisecond)
		if st := store.Stats(); fired.Load() != 1 || st.TimedOut != 1 || st.LateTimeouts != 0 {
			t.Errorf("after the hour: fired %d, stats %+v; want the timeout handled once, none late", fired.Load(), st)
		}
	})
}

// A step that names a timeout the saga does not declare, in Schedule or in
// Cancel, or that completes the instance with a timeout scheduled, is
// refused alike: the fact goes to poison saying why, and nothing of the
// step is written. A Schedule undone by a Cancel before Complete stands
// no more, and the step completes.
func TestStepTimeoutNamesAreChecked(t *testing.T) {
	for _, c := range []struct {
		name string
		step func(saga.Step[stepState]) saga.Step[stepState]
		want string // in the poisoned fact's failure; "" when the step commits
	}{
		{"unknown schedule", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment_due", time.Hour)
		}, `saga checkout: instance "o-1": schedule "payment_due": the saga declares no such timeout (it declares "payment-due")`},
		{"unknown cancel", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Cancel("nope")
		}, `saga checkout: instance "o-1": cancel "nope": the saga declares no such timeout (it declares "payment-due")`},
		{"unknown cancel on a completing step", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Complete().Cancel("nope")
		}, `saga checkout: instance "o-1": cancel "nope": the saga declares no such timeout`},
		{"schedule after complete", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Complete().Schedule("payment-due", time.Hour)
		}, `saga checkout: instance "o-1": schedule "payment-due": the step also completes the instance`},
		{"schedule before complete", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment-due", time.Hour).Complete()
		}, `saga checkout: instance "o-1": schedule "payment-due": the step also completes the instance`},
		{"unknown schedule on a completing step", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Complete().Schedule("anything", time.Hour)
		}, `saga checkout: instance "o-1": schedule "anything": the saga declares no such timeout`},
		{"schedule undone, then complete", func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment-due", time.Hour).Cancel("payment-due").Complete()
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			stepRun(t, c.step, func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64) {
				warrentest.Publish(b, stepFactPlaced, stepPlaced{ID: "o-1"})
				b.Idle()
				poisoned := b.Poisoned("saga.checkout")
				st := store.Stats()
				if c.want == "" {
					if len(poisoned) != 0 || st.Started != 1 || st.Completed != 1 {
						t.Errorf("poisoned %+v, stats %+v; want the step committed, the instance complete", poisoned, st)
					}
					return
				}
				if len(poisoned) != 1 || !strings.Contains(poisoned[0].Failure, c.want) {
					t.Fatalf("poisoned %+v; want the fact, its failure saying %q", poisoned, c.want)
				}
				if st.Started != 0 || st.Completed != 0 {
					t.Errorf("stats %+v; want nothing written", st)
				}
				if n := scheduledRows(t, b.Context(), ob, db); n != 0 {
					t.Errorf("%d timeouts in the outbox; want none", n)
				}
			})
		})
	}
}

// A Schedule with a negative delay fails the same on every attempt, so it
// is not retried: the fact goes to poison at its first attempt, its
// failure naming the timeout and the delay, and nothing of the step is
// written. A negative delay that a later call of the step undoes (a
// Schedule of the same timeout, or its Cancel) stands no more.
func TestStepNegativeDelayIsPermanent(t *testing.T) {
	t.Run("standing", func(t *testing.T) {
		stepRunAttempts(t, 3, func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment-due", -90*time.Second)
		}, func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64) {
			warrentest.Publish(b, stepFactPlaced, stepPlaced{ID: "o-1"})
			b.Idle()
			want := `saga checkout: instance "o-1": schedule "payment-due" in -1m30s: a negative delay`
			poisoned := b.Poisoned("saga.checkout")
			if len(poisoned) != 1 || !strings.Contains(poisoned[0].Failure, want) || poisoned[0].Attempts != 1 {
				t.Fatalf("poisoned %+v; want the fact after 1 attempt, its failure saying %q", poisoned, want)
			}
			if calls, retried := b.Calls("saga.checkout"), b.Retried("saga.checkout"); len(calls) != 1 || len(retried) != 0 {
				t.Errorf("%d handler calls, %d retried; want 1 call and no retry", len(calls), len(retried))
			}
			if st := store.Stats(); st.Started != 0 {
				t.Errorf("stats %+v; want nothing written", st)
			}
			if n := scheduledRows(t, b.Context(), ob, db); n != 0 {
				t.Errorf("%d timeouts in the outbox; want none", n)
			}
		})
	})
	for name, step := range map[string]func(saga.Step[stepState]) saga.Step[stepState]{
		"scheduled again": func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment-due", -time.Minute).Schedule("payment-due", time.Hour)
		},
		"cancelled": func(s saga.Step[stepState]) saga.Step[stepState] {
			return s.Schedule("payment-due", -time.Minute).Cancel("payment-due")
		},
	} {
		t.Run(name, func(t *testing.T) {
			stepRunAttempts(t, 3, step, func(t *testing.T, b *warrentest.Bus, store *saga.Store, ob *outbox.Outbox, db *sql.DB, fired *atomic.Int64) {
				warrentest.Publish(b, stepFactPlaced, stepPlaced{ID: "o-1"})
				b.Idle()
				if p := b.Poisoned("saga.checkout"); len(p) != 0 {
					t.Errorf("poisoned %+v; want the step committed", p)
				}
				if st := store.Stats(); st.Started != 1 {
					t.Errorf("stats %+v; want the instance started", st)
				}
			})
		})
	}
}
