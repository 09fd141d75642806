package golden_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	versions "github.com/warrenbus/warren/golden/versions/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// byID records the facts a consumer handled, by message id.
type byID[T any] struct {
	mu    sync.Mutex
	facts map[string][]T
}

func (b *byID[T]) add(id string, v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.facts == nil {
		b.facts = map[string][]T{}
	}
	b.facts[id] = append(b.facts[id], v)
}

func (b *byID[T]) get(id string) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]T(nil), b.facts[id]...)
}

func (b *byID[T]) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.facts)
}

// ledger is the consumer built for version 3 of order.placed: it reads
// versions 1 and 2 through the generated upcast (1→2) and its own (2→3).
type ledger struct{ placed byID[versions.OrderPlaced] }

func (l *ledger) HandleOrderPlaced(_ context.Context, d runtime.Delivery, f versions.OrderPlaced) error {
	l.placed.add(d.MessageID, f)
	return nil
}

func (l *ledger) HandleOrderShipped(context.Context, runtime.Delivery, versions.OrderShipped) error {
	return nil
}

// UpcastOrderPlacedV2 is the hand-written upcast: version 2 had no
// currency, and every order was in euros.
func (l *ledger) UpcastOrderPlacedV2(v versions.OrderPlacedV2) (versions.OrderPlaced, error) {
	return versions.OrderPlaced{OrderID: v.OrderID, Amount: versions.OrderPlacedAmount{Cents: int64(v.Amount), Currency: "EUR"}, Coupon: v.Coupon}, nil
}

// legacyMailer is still built for version 1.
type legacyMailer struct{ placed byID[versions.OrderPlacedV1] }

func (m *legacyMailer) HandleOrderPlacedV1(_ context.Context, d runtime.Delivery, f versions.OrderPlacedV1) error {
	m.placed.add(d.MessageID, f)
	return nil
}

// downcaster is the producer's hand-written downcast for its dual publish
// window of versions 2 and 3.
type downcaster struct{}

func (downcaster) DowncastOrderPlaced(v versions.OrderPlaced) (versions.OrderPlacedV2, error) {
	return versions.OrderPlacedV2{OrderID: v.OrderID, Amount: float64(v.Amount.Cents), Coupon: v.Coupon}, nil
}

// TestVersionMigration moves the producer of order.placed from version 1
// to version 3 (published as 2 and 3) on the real broker while consumers
// built for version 1 (legacy-mailer) and version 3 (ledger, with
// upcasts) are live and an outbox holds rows written as version 1; the new
// producer publishes, and writes through its outbox, in versions 2 and 3. The
// ledger handles every fact once and poisons none; the legacy mailer
// handles every version-1 fact once, poisons the new facts it cannot read
// with a header naming both versions, and handles those once after it is
// upgraded and they are replayed.
func TestVersionMigration(t *testing.T) {
	url := testenv.VHost(t, "warren-versions")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &versions.Topology, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	legacyTop, _ := versions.Topology.Consumer("legacy-mailer")
	ledgerTop, _ := versions.Topology.Consumer("ledger")

	// Before the deploy: the old producer wrote version 1 into its outbox
	// and published version 1, still queued.
	db, err := sql.Open("pgx", testenv.PGDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	table := fmt.Sprintf("versions_outbox_%d", time.Now().UnixNano())
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + table) })
	ob, err := outbox.New(outbox.Config{Dialect: outbox.Postgres, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var v1IDs []string
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id, err := ob.Write(ctx, tx, versions.FactOrderPlacedV1, versions.OrderPlacedV1{OrderID: fmt.Sprintf("ORD-OUTBOX-%d", i), Total: 100 + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		v1IDs = append(v1IDs, id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	oldPub, err := runtime.NewPublisher(conn, versions.Topology.Exchanges[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		id, err := oldPub.Publish(ctx, versions.FactOrderPlacedV1, versions.OrderPlacedV1{OrderID: fmt.Sprintf("ORD-QUEUED-%d", i), Total: 200})
		if err != nil {
			t.Fatal(err)
		}
		v1IDs = append(v1IDs, id)
	}

	// Consumers of both builds, and the outbox relay, are live.
	led, old := &ledger{}, &legacyMailer{}
	lc, err := versions.NewLedgerConsumer(conn, led)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := versions.NewLegacyMailerConsumer(conn, old)
	if err != nil {
		t.Fatal(err)
	}
	runConsumer(t, lc)
	stopOld := runStoppable(t, mc)
	relay, err := versions.NewOutboxRelay(sqldb.FromSQL(db), conn, outbox.RelayConfig{Dialect: outbox.Postgres, Table: table, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(rctx) }()
	t.Cleanup(func() { stopRelay(); <-relayDone })

	// The new producer publishes version 3, and version 2 beside it.
	pub, err := versions.NewPublisher(conn, downcaster{})
	if err != nil {
		t.Fatal(err)
	}
	var newIDs []string
	for i := range 3 {
		id, err := pub.PublishOrderPlaced(ctx, versions.OrderPlaced{OrderID: fmt.Sprintf("ORD-NEW-%d", i), Amount: versions.OrderPlacedAmount{Cents: 300, Currency: "USD"}})
		if err != nil {
			t.Fatal(err)
		}
		newIDs = append(newIDs, id)
	}
	// It writes through its outbox too, which the relay publishes in
	// versions 2 and 3 as the publisher does.
	w, err := versions.NewOutboxWriter(outbox.Config{Dialect: outbox.Postgres, Table: table}, downcaster{})
	if err != nil {
		t.Fatal(err)
	}
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		id, err := w.WriteOrderPlaced(ctx, tx, versions.OrderPlaced{OrderID: fmt.Sprintf("ORD-NEW-OUTBOX-%d", i), Amount: versions.OrderPlacedAmount{Cents: 400, Currency: "USD"}})
		if err != nil {
			t.Fatal(err)
		}
		newIDs = append(newIDs, id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// Each new fact is one message that carries versions 2 and 3: the
	// ledger has settled them all once it handled ten.
	testenv.Eventually(t, "the ledger to handle all 10 facts", func() bool {
		return led.placed.len() == 10
	})
	testenv.Eventually(t, "the legacy mailer to settle every fact", func() bool {
		n := conn.Counts(legacyTop.Name)
		return old.placed.len() == 5 && n.Get(runtime.Poisoned) == 5
	})
	for _, id := range v1IDs {
		got := led.placed.get(id)
		if len(got) != 1 || got[0].Amount.Currency != "EUR" {
			t.Errorf("ledger handled version-1 fact %s as %+v; want once, upcast (EUR)", id, got)
		}
		if n := len(old.placed.get(id)); n != 1 {
			t.Errorf("legacy mailer handled version-1 fact %s %d times, want once", id, n)
		}
	}
	for _, id := range newIDs {
		got := led.placed.get(id)
		if len(got) != 1 || got[0].Amount.Currency != "USD" {
			t.Errorf("ledger handled new fact %s as %+v; want once, the version-3 copy (USD)", id, got)
		}
	}
	for _, name := range []string{ledgerTop.Name, legacyTop.Name} {
		if n := conn.Counts(name); n.Get(runtime.Delivered) != 10 || n.Get(runtime.DuplicateSkipped) != 0 {
			t.Errorf("%s: %d messages delivered, %d skipped; want 10, one per fact, and none", name, n.Get(runtime.Delivered), n.Get(runtime.DuplicateSkipped))
		}
	}
	if n := conn.Counts(ledgerTop.Name).Get(runtime.Poisoned); n != 0 {
		t.Errorf("ledger poisoned %d", n)
	}
	msgs, err := poison.List(ctx, conn, legacyTop, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 {
		t.Fatalf("legacy poison queue holds %d, want the 5 new facts", len(msgs))
	}
	for _, m := range msgs {
		if got, _ := m.Headers[runtime.HeaderVersionMismatch].(string); got != "fact version 2, consumer reads versions 1" {
			t.Errorf("poisoned %s: %s = %q, want both versions named", m.ID, runtime.HeaderVersionMismatch, got)
		}
	}

	// The legacy mailer is upgraded to read version 3 (as a consumer
	// without "versions" is generated), and its poisoned facts replayed:
	// it reads them in version 3, which each still carries.
	if err := stopOld(); err != nil {
		t.Fatal(err)
	}
	var upgraded byID[versions.OrderPlaced]
	nc, err := runtime.NewConsumer(conn, legacyTop, []runtime.Route{runtime.HandleVersions(versions.FactOrderPlaced,
		func(_ context.Context, d runtime.Delivery, f versions.OrderPlaced) error {
			upgraded.add(d.MessageID, f)
			return nil
		},
		runtime.Upcast(versions.FactOrderPlacedV1, func(v versions.OrderPlacedV1) (versions.OrderPlaced, error) {
			return led.UpcastOrderPlacedV2(versions.OrderPlacedV2{OrderID: v.OrderID, Amount: float64(v.Total)})
		}),
		runtime.Upcast(versions.FactOrderPlacedV2, led.UpcastOrderPlacedV2),
	)})
	if err != nil {
		t.Fatal(err)
	}
	runConsumer(t, nc)
	replayed, err := poison.Replay(ctx, conn, legacyTop, poison.Filter{})
	if err != nil || len(replayed) != 5 {
		t.Fatalf("replay: %d messages, err %v; want 5", len(replayed), err)
	}
	testenv.Eventually(t, "the upgraded mailer to handle the replayed facts", func() bool { return upgraded.len() == 5 })
	for _, id := range newIDs {
		if got := upgraded.get(id); len(got) != 1 || got[0].OrderID == "" || got[0].Amount.Currency != "USD" {
			t.Errorf("upgraded mailer handled %s as %+v, want once, in version 3 (USD)", id, got)
		}
	}
	if after, _ := poison.List(ctx, conn, legacyTop, poison.Filter{}); len(after) != 0 {
		t.Errorf("%d facts back in poison after the upgrade", len(after))
	}
}

// runStoppable runs a consumer until the returned stop is called (or the
// test ends), and stop returns Run's result.
func runStoppable(t *testing.T, c *runtime.Consumer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}
