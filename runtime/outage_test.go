package runtime

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/topology"
)

// The idempotency guard's PostgreSQL is unreachable for far longer than
// the whole retry ladder while facts arrive: nothing is poisoned, nothing
// is acked without its work, and the consumer pauses (logged and counted
// once) instead of spinning. Once the database is back the consumer
// resumes by itself and every fact is handled once, its row written in the
// claim's transaction.
func TestDatabaseOutageLongerThanTheLadderPoisonsNothing(t *testing.T) {
	dsn := testenv.PGDSN(t)
	direct, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Close() })
	pgProxy := newProxy(t, dsn, nil)
	db, err := sql.Open("pgx", pgProxy.url(dsn, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	guard, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: idempotency.Postgres, Table: testenv.TableName("warren_claims")})
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, direct, guard.Table())
	work := testenv.TableName("warren_work")
	if _, err := direct.Exec(`CREATE TABLE "` + work + `" (id TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, direct, work)

	b := newBroker(t, topology.ConsumerSpec{Name: "db-outage", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 2})
	rec := &logRecorder{}
	metrics := &countingMetrics{counts: map[Event]int{}}
	conn := b.dial(Config{Logger: slog.New(rec), Metrics: metrics})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var calls atomic.Int32
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		calls.Add(1)
		tx, ok := idempotency.Tx(ctx)
		if !ok {
			return Permanent(fmt.Errorf("no claim transaction"))
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO "`+work+`" (id) VALUES ($1)`, d.MessageID)
		return err
	})}, WithGuard(guard), WithOutagePolicy(OutagePolicy{PauseAfter: 3, ProbeMin: 20 * time.Millisecond, ProbeMax: 200 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)

	pgProxy.setDown(true)
	pub, _ := NewPublisher(conn, b.events())
	const n = 30
	ids := map[string]bool{}
	for i := range n {
		ids[mustPublish(t, pub, f, item{SKU: fmt.Sprint("sku-", i)})] = true
	}
	testenv.Eventually(t, "the consumer paused", func() bool {
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return metrics.paused == 1
	})
	// The ladder is 20+40+80 ms: an outage a dozen times longer would have
	// poisoned every fact in it.
	time.Sleep(2 * time.Second)
	counts := conn.Counts(spec.Name)
	if counts.Get(Poisoned) != 0 || counts.Get(Acked) != 0 || counts.Get(Retried) != 0 || b.depth(spec.PoisonQueue) != 0 {
		t.Fatalf("during the outage: counts %v, poison depth %d; want nothing acked, retried or poisoned", counts, b.depth(spec.PoisonQueue))
	}
	if counts.Get(Held) == 0 {
		t.Fatalf("during the outage: nothing held; counts %v", counts)
	}
	if h := c.Health(); !h.Paused {
		t.Errorf("health during the outage: %+v, want paused", h)
	}

	heldDuringOutage := counts.Get(Held)
	pgProxy.setDown(false)
	restored := time.Now()
	testenv.Eventually(t, "every fact handled once the database is back", func() bool { return conn.Counts(spec.Name).Get(Acked) == n })
	t.Logf("database outage: sent %d, confirmed %d, handled %d, poisoned 0; %d deliveries held without spending an attempt during the outage; all handled %dms after the database was back",
		n, n, conn.Counts(spec.Name).Get(Acked), heldDuringOutage, time.Since(restored).Milliseconds())
	rows, err := direct.Query(`SELECT id, count(*) FROM "` + work + `" GROUP BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		var id string
		var k int
		if err := rows.Scan(&id, &k); err != nil {
			t.Fatal(err)
		}
		if !ids[id] || k != 1 {
			t.Errorf("work row %s written %d times; want each published fact once", id, k)
		}
		got++
	}
	if got != n {
		t.Errorf("%d facts have their work done, want %d", got, n)
	}
	counts = conn.Counts(spec.Name)
	if counts.Get(Poisoned) != 0 || b.depth(spec.PoisonQueue) != 0 {
		t.Errorf("after the outage: counts %v, poison depth %d; want nothing poisoned", counts, b.depth(spec.PoisonQueue))
	}
	metrics.mu.Lock()
	paused, resumed := metrics.paused, metrics.resumed
	metrics.mu.Unlock()
	if paused != 1 || resumed != 1 {
		t.Errorf("paused %d, resumed %d times; want once each", paused, resumed)
	}
	pauseLogs := len(rec.values("consumer paused: a dependency is unavailable; probing with one message at a time", "consumer"))
	resumeLogs := len(rec.values("consumer resumed: the probe succeeded", "consumer"))
	if pauseLogs != 1 || resumeLogs != 1 {
		t.Errorf("logged the pause %d and the resume %d times; want once each:\n%s", pauseLogs, resumeLogs, rec.text())
	}
	if h := c.Health(); h.Paused {
		t.Errorf("health after the outage: %+v, want not paused", h)
	}
}

// A handler that marks its error Unavailable spends no attempt, however
// often it fails: with two attempts allowed, ten unavailable failures in a
// row poison nothing. The consumer pauses after three, probes, and
// resumes by itself when the handler succeeds; the fact is then handled
// as its first attempt.
func TestUnavailableSpendsNoAttempt(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "unavailable", Bindings: []string{"item.#"}, Backoff: testLadder[:1], MaxAttempts: 2})
	metrics := &countingMetrics{counts: map[Event]int{}}
	conn := b.dial(Config{Metrics: metrics})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var calls atomic.Int32
	var handledAttempt atomic.Int32
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if calls.Add(1) <= 10 {
			return Unavailable(fmt.Errorf("mail server: connection refused"))
		}
		handledAttempt.Store(int32(d.Attempt))
		return nil
	})}, WithOutagePolicy(OutagePolicy{PauseAfter: 3, ProbeMin: 10 * time.Millisecond, ProbeMax: 40 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})
	testenv.Eventually(t, "the fact handled", func() bool { return conn.Counts(spec.Name).Get(Acked) == 1 })
	counts := conn.Counts(spec.Name)
	if counts.Get(Poisoned) != 0 || counts.Get(Retried) != 0 || counts.Get(Held) != 10 {
		t.Errorf("counts %v; want 10 held, nothing retried or poisoned", counts)
	}
	if n := handledAttempt.Load(); n != 1 {
		t.Errorf("handled as attempt %d, want 1", n)
	}
	// The probe's delivery is acked before the consumer records that it
	// resumed.
	testenv.Eventually(t, "the consumer resumed", func() bool {
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return metrics.resumed >= 1
	})
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	if metrics.paused != 1 || metrics.resumed != 1 {
		t.Errorf("paused %d, resumed %d; want once each", metrics.paused, metrics.resumed)
	}
}
