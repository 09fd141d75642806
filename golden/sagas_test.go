package golden_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	amqp "github.com/rabbitmq/amqp091-go"
	_ "modernc.org/sqlite"

	sagas "github.com/warrenbus/warren/golden/sagas/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
)

// checkout is the saga's handler: it takes an order from placed to paid,
// cancels it on request or when payment-due fires, and publishes
// order.cancelled when it does. Orders whose id starts with "fast-" give
// the customer a few milliseconds to pay, the others an hour; an order
// whose id starts with "bad-" is cancelled with an invalid fact.
type checkout struct{}

func (checkout) HandleOrderPlaced(_ context.Context, in saga.Instance[sagas.Checkout], f sagas.OrderPlaced) (saga.Step[sagas.Checkout], error) {
	st := in.State
	total := f.TotalCents
	st.TotalCents = &total
	if in.New {
		st.Status = sagas.CheckoutStatusPlaced
	}
	if st.PaidCents != nil && *st.PaidCents >= total {
		st.Status = sagas.CheckoutStatusPaid
		return saga.Next(st).Complete(), nil
	}
	due := time.Hour
	if strings.HasPrefix(in.ID, "fast-") {
		due = 5 * time.Millisecond
	}
	return saga.Next(st).Schedule("payment-due", due), nil
}

func (checkout) HandleOrderPaid(_ context.Context, in saga.Instance[sagas.Checkout], f sagas.OrderPaid) (saga.Step[sagas.Checkout], error) {
	st := in.State
	if in.New {
		st.Status = sagas.CheckoutStatusPlaced
	}
	paid := f.AmountCents
	if st.PaidCents != nil {
		paid += *st.PaidCents
	}
	st.PaidCents = &paid
	if st.TotalCents != nil && paid >= *st.TotalCents {
		st.Status = sagas.CheckoutStatusPaid
		return saga.Next(st).Complete(), nil
	}
	return saga.Next(st), nil
}

func (checkout) HandleOrderCancelRequested(_ context.Context, in saga.Instance[sagas.Checkout], f sagas.OrderCancelRequested) (saga.Step[sagas.Checkout], error) {
	return cancel(in, sagas.OrderCancelledReasonRequested)
}

func (checkout) TimeoutPaymentDue(_ context.Context, in saga.Instance[sagas.Checkout]) (saga.Step[sagas.Checkout], error) {
	return cancel(in, sagas.OrderCancelledReasonUnpaid)
}

func cancel(in saga.Instance[sagas.Checkout], reason sagas.OrderCancelledReason) (saga.Step[sagas.Checkout], error) {
	st := in.State
	st.Status = sagas.CheckoutStatusCancelled
	if strings.HasPrefix(in.ID, "bad-") {
		reason = "lost"
	}
	return saga.Next(st).Publish(sagas.FactOrderCancelled, sagas.OrderCancelled{OrderID: in.ID, Reason: reason}).Complete(), nil
}

// mailer records the order.cancelled facts.
type mailer struct {
	mu   sync.Mutex
	seen map[string]sagas.OrderCancelledReason
}

func (m *mailer) HandleOrderCancelled(_ context.Context, _ runtime.Delivery, f sagas.OrderCancelled) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen[f.OrderID] = f.Reason
	return nil
}

func (m *mailer) reason(order string) (sagas.OrderCancelledReason, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.seen[order]
	return r, ok
}

// sagaEvents counts the saga events a store reports, by event, consumer
// and routing key.
type sagaEvents struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *sagaEvents) Count(consumer string, e runtime.Event, routingKey string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[e.String()+" "+consumer+" "+routingKey]++
}

func (m *sagaEvents) of(e runtime.Event, routingKey string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[e.String()+" saga.checkout "+routingKey]
}

func (*sagaEvents) ObserveHandler(string, string, time.Duration, error) {}
func (*sagaEvents) Paused(string)                                       {}
func (*sagaEvents) Resumed(string, time.Duration)                       {}

// sagaDB is one database the saga test runs on.
type sagaDB struct {
	name    string
	dialect sqldb.Dialect
	db      *sql.DB
	txDB    sqldb.DB
}

func sagaDBs(t *testing.T) []sagaDB {
	dsn := "file:" + filepath.Join(t.TempDir(), "sagas.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	lite := testenv.OpenDB(t, "sqlite", dsn)
	pg := testenv.OpenDB(t, "pgx", testenv.PGDSN(t))
	return []sagaDB{
		{"sqlite", sqldb.SQLite, lite, sqldb.FromSQL(lite)},
		{"postgres", sqldb.Postgres, pg, sqldb.FromSQL(pg)},
	}
}

// TestSagaOnBroker runs the generated saga of golden/sagas on the real
// broker, its instances in SQLite and in PostgreSQL: a fact starts an
// instance, a later one completes it and cancels its timeout, a timeout
// that fires cancels the order through a published fact, and bad states
// and bad facts are rolled back and poisoned with nothing overwritten.
func TestSagaOnBroker(t *testing.T) {
	for _, d := range sagaDBs(t) {
		t.Run(d.name, func(t *testing.T) { testSaga(t, d) })
	}
}

func testSaga(t *testing.T, d sagaDB) {
	url := testenv.VHost(t, "warren-saga")
	ctx, cancelCtx := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelCtx()
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs: []string{url}, Topology: &sagas.Topology,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	claims, boxTable, instTable := testenv.TableName("claims"), testenv.TableName("outbox"), testenv.TableName("sagas")
	for _, tb := range []string{claims, boxTable, boxTable + "_seq", boxTable + "_seq_source", instTable} {
		testenv.DropTable(t, d.db, tb)
	}
	guard, err := idempotency.NewSQLGuardDB(d.txDB, idempotency.SQLConfig{Dialect: d.dialect, Table: claims})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sagas.NewOutboxWriter(outbox.Config{Dialect: d.dialect, Table: boxTable})
	if err != nil {
		t.Fatal(err)
	}
	events := &sagaEvents{counts: map[string]int{}}
	store, err := saga.NewStore(d.txDB, saga.Config{Dialect: d.dialect, Table: instTable, Guard: guard, Outbox: w.Outbox(), Metrics: events})
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Outbox().MigrateDB(ctx, d.txDB); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	relay, err := sagas.NewOutboxRelay(d.txDB, conn, outbox.RelayConfig{Dialect: d.dialect, Table: boxTable, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = relay.Run(ctx) }()
	sc, err := sagas.NewCheckoutSaga(conn, store, checkout{})
	if err != nil {
		t.Fatal(err)
	}
	runConsumer(t, sc)
	m := &mailer{seen: map[string]sagas.OrderCancelledReason{}}
	mc, err := sagas.NewMailerConsumer(conn, m)
	if err != nil {
		t.Fatal(err)
	}
	runConsumer(t, mc)
	pub, err := sagas.NewPublisher(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })

	instance := func(id string) (status string, version int64, completed bool) {
		row := d.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT state, version, completed_at IS NOT NULL FROM %q WHERE saga = 'checkout' AND instance = $1`, instTable), id)
		if d.dialect == sqldb.SQLite {
			row = d.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT state, version, completed_at IS NOT NULL FROM %q WHERE saga = 'checkout' AND instance = ?`, instTable), id)
		}
		var state string
		if err := row.Scan(&state, &version, &completed); err != nil {
			return "", 0, false
		}
		return state, version, completed
	}
	pendingTimeouts := func() int {
		var n int
		if err := d.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %q WHERE routing_key = 'saga.checkout.timeout' AND published_at IS NULL`, boxTable)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	poison := func() int {
		f, err := conn.Figures(ctx, *sagaQueue(t))
		if err != nil {
			t.Fatal(err)
		}
		return f.PoisonDepth
	}

	t.Run("placed then paid completes, its timeout cancelled", func(t *testing.T) {
		if _, err := pub.PublishOrderPlaced(ctx, sagas.OrderPlaced{OrderID: "slow-1", TotalCents: 500}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the instance to start", func() bool { _, v, _ := instance("slow-1"); return v == 1 })
		if n := pendingTimeouts(); n != 1 {
			t.Fatalf("%d pending timeouts after the order was placed; want 1", n)
		}
		if _, err := pub.PublishOrderPaid(ctx, sagas.OrderPaid{OrderID: "slow-1", AmountCents: 500}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the instance to complete", func() bool { _, _, done := instance("slow-1"); return done })
		state, v, _ := instance("slow-1")
		if v != 2 || !strings.Contains(state, `"status":"paid"`) || !strings.Contains(state, `"paid_cents":500`) {
			t.Errorf("instance slow-1: version %d, state %s; want version 2, paid 500", v, state)
		}
		if n := pendingTimeouts(); n != 0 {
			t.Errorf("%d pending timeouts after completion; want the timeout cancelled", n)
		}
		// The completion is counted once its transaction has committed,
		// which is when the row above shows it: wait for the count, then
		// check that nothing was counted twice.
		testenv.Eventually(t, "the completion to be counted", func() bool {
			return store.Stats().Completed >= 1 && events.of(runtime.SagaCompleted, sagas.OrderPaidRoutingKey) >= 1
		})
		if st := store.Stats(); st.Started != 1 || st.Completed != 1 {
			t.Errorf("stats %+v; want a start and a completion counted", st)
		}
		if s, c := events.of(runtime.SagaStarted, sagas.OrderPlacedRoutingKey), events.of(runtime.SagaCompleted, sagas.OrderPaidRoutingKey); s != 1 || c != 1 {
			t.Errorf("metrics: %d saga_started by order.placed, %d saga_completed by order.paid; want 1 of each", s, c)
		}
	})

	t.Run("a timeout cancels the order with a published fact", func(t *testing.T) {
		if _, err := pub.PublishOrderPlaced(ctx, sagas.OrderPlaced{OrderID: "fast-1", TotalCents: 700}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the mailer to hear of the cancellation", func() bool { _, ok := m.reason("fast-1"); return ok })
		if r, _ := m.reason("fast-1"); r != sagas.OrderCancelledReasonUnpaid {
			t.Errorf("cancelled for %q; want unpaid", r)
		}
		state, _, done := instance("fast-1")
		if !done || !strings.Contains(state, `"status":"cancelled"`) {
			t.Errorf("instance fast-1: state %s, completed %v; want cancelled and complete", state, done)
		}
		if st := store.Stats(); st.TimedOut != 1 {
			t.Errorf("stats %+v; want 1 timeout handled", st)
		}
		if n := events.of(runtime.SagaTimedOut, "saga.checkout.timeout"); n != 1 {
			t.Errorf("metrics: %d saga_timed_out; want 1", n)
		}
	})

	t.Run("a fact after completion is ignored", func(t *testing.T) {
		before := store.Stats().Ignored
		if _, err := pub.PublishOrderPaid(ctx, sagas.OrderPaid{OrderID: "fast-1", AmountCents: 700}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the late payment to be ignored", func() bool { return store.Stats().Ignored == before+1 })
		if state, _, _ := instance("fast-1"); !strings.Contains(state, `"status":"cancelled"`) {
			t.Errorf("state %s after a late payment; want it unchanged", state)
		}
	})

	t.Run("a fact that finds no instance follows its rule", func(t *testing.T) {
		before := store.Stats().Ignored
		if _, err := pub.PublishOrderCancelRequested(ctx, sagas.OrderCancelRequested{Order: sagas.OrderCancelRequestedOrder{ID: "nobody"}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the request to be ignored", func() bool { return store.Stats().Ignored == before+1 })
		if _, v, _ := instance("nobody"); v != 0 {
			t.Errorf("an instance was started by a fact whose rule is ignore")
		}
	})

	t.Run("a published fact that does not validate rolls back and poisons", func(t *testing.T) {
		if _, err := pub.PublishOrderPlaced(ctx, sagas.OrderPlaced{OrderID: "bad-1", TotalCents: 100}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the instance to start", func() bool { _, v, _ := instance("bad-1"); return v == 1 })
		if _, err := pub.PublishOrderCancelRequested(ctx, sagas.OrderCancelRequested{Order: sagas.OrderCancelRequestedOrder{ID: "bad-1"}}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the request in poison", func() bool { return poison() == 1 })
		if state, v, done := instance("bad-1"); v != 1 || done || !strings.Contains(state, `"status":"placed"`) {
			t.Errorf("instance bad-1: version %d, completed %v, state %s; want it as it was", v, done, state)
		}
		if _, ok := m.reason("bad-1"); ok {
			t.Error("the invalid fact was published")
		}
	})

	t.Run("a stored state that no longer matches its schema is not overwritten", func(t *testing.T) {
		if _, err := pub.PublishOrderPlaced(ctx, sagas.OrderPlaced{OrderID: "slow-2", TotalCents: 100}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the instance to start", func() bool { _, v, _ := instance("slow-2"); return v == 1 })
		broken := `{"status":"misplaced"}`
		q := fmt.Sprintf(`UPDATE %q SET state = $1 WHERE instance = 'slow-2'`, instTable)
		if d.dialect == sqldb.SQLite {
			q = strings.Replace(q, "$1", "?", 1)
		}
		if _, err := d.db.ExecContext(ctx, q, broken); err != nil {
			t.Fatal(err)
		}
		id, err := pub.PublishOrderPaid(ctx, sagas.OrderPaid{OrderID: "slow-2", AmountCents: 100})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the payment in poison", func() bool { return poison() == 2 })
		if state, v, _ := instance("slow-2"); state != broken || v != 1 {
			t.Errorf("instance slow-2: version %d, state %s; want the stored state left alone", v, state)
		}
		msg := getLast(t, url, sagaQueue(t).PoisonQueue, id)
		if f, _ := msg.Headers[runtime.HeaderFailure].(string); !strings.Contains(f, `instance "slow-2"`) || !strings.Contains(f, "does not match the state's schema") {
			t.Errorf("poison header %s = %q; want it to name the instance and the schema", runtime.HeaderFailure, f)
		}
	})

	t.Run("operators list, show and delete instances", func(t *testing.T) {
		admin, err := saga.NewAdmin(d.txDB, d.dialect, instTable, w.Outbox())
		if err != nil {
			t.Fatal(err)
		}
		rows, err := admin.List(ctx, "checkout", 100)
		if err != nil || len(rows) < 4 || !rows[0].CompletedAt.IsZero() {
			t.Fatalf("List = %d rows, %v; want every instance, running ones first", len(rows), err)
		}
		sums, err := admin.Summaries(ctx)
		if err != nil || len(sums) != 1 || sums[0].Running+sums[0].Completed != int64(len(rows)) {
			t.Fatalf("Summaries = %+v, %v; want one saga counting %d instances", sums, err, len(rows))
		}
		r, ok, err := admin.Show(ctx, "checkout", "slow-2")
		if err != nil || !ok || r.Version != 1 || len(r.Timeouts) != 1 {
			t.Fatalf("Show = %+v, %v, %v; want slow-2 at version 1 with its timeout pending", r, ok, err)
		}
		before := pendingTimeouts()
		if deleted, err := admin.Delete(ctx, "checkout", "slow-2"); !deleted || err != nil {
			t.Fatalf("Delete = %v, %v", deleted, err)
		}
		if n := pendingTimeouts(); n != before-1 {
			t.Errorf("%d pending timeouts after the delete, %d before; want its timeout cancelled", n, before)
		}
		if _, ok, _ := admin.Show(ctx, "checkout", "slow-2"); ok {
			t.Error("slow-2 is still there")
		}
	})
}

// getLast takes the messages of queue until the one with message id id.
func getLast(t *testing.T, url, queue, id string) amqp.Delivery {
	t.Helper()
	for {
		if msg := getOne(t, url, queue); msg.MessageId == id {
			return msg
		}
	}
}

func sagaQueue(t *testing.T) *topology.Consumer {
	c, ok := sagas.Topology.Consumer("saga.checkout")
	if !ok {
		t.Fatal("no saga.checkout queue in the topology")
	}
	return &c
}
