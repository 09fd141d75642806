package main

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

	cat "github.com/warrenbus/warren/examples/catalogue/catalogueevents"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/sqldb/pgxdb"
)

// TestTypedOutbox: an order placed through the generated OutboxWriter in a
// transaction that commits reaches order-mailer once, with the message id
// WriteOrderPlaced returned; one whose transaction rolls back leaves
// neither order nor fact. The relay is the generated one, bound to the
// package's events exchange.
func TestTypedOutbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testenv.VHost(t, "warren-catalogue-outbox")
	db, err := sql.Open("pgx", testenv.PGDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w, err := cat.NewOutboxWriter(outbox.Config{Dialect: outbox.Postgres, Table: testenv.TableName("warren_outbox")})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Outbox().Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, db, w.Outbox().Table())
	testenv.DropTable(t, db, w.Outbox().SequenceTable())
	testenv.DropTable(t, db, w.Outbox().SequenceSourceTable())
	orders := testenv.TableName("orders")
	if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE %q (id text PRIMARY KEY, total bigint)`, orders)); err != nil {
		t.Fatal(err)
	}
	testenv.DropTable(t, db, orders)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &cat.Topology, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mail := &mailbox{}
	mailer, err := cat.NewOrderMailerConsumer(conn, mail)
	if err != nil {
		t.Fatal(err)
	}
	consumerCtx, stopConsumer := context.WithCancel(ctx)
	consumerDone := make(chan error, 1)
	go func() { consumerDone <- mailer.Run(consumerCtx) }()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { stopConsumer(); <-consumerDone }) }
	defer stop()

	// Rolled back: the order fails to store after its fact was written.
	rolledBack := order("00000000-0000-4000-8000-00000000000a")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteOrderPlaced(ctx, tx, rolledBack); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	id, err := placeOrder(ctx, db, w, orders, order(committedOrder))
	if err != nil {
		t.Fatal(err)
	}

	relay, err := cat.NewOutboxRelay(pgxdb.FromSQL(db), conn, outbox.RelayConfig{Dialect: outbox.Postgres, Table: w.Outbox().Table(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := relay.RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("RelayOnce = %d, %v; want the committed fact alone published", n, err)
	}
	got := mail.wait(t, 1)
	if got[0].id != id || got[0].orderID != committedOrder {
		t.Errorf("order-mailer got %+v; want order %s with message id %s", got[0], committedOrder, id)
	}
	var left int
	if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM %q`, w.Outbox().Table())).Scan(&left); err != nil || left != 0 {
		t.Errorf("outbox rows left = %d, %v; want none (the rolled-back fact never had one)", left, err)
	}
	if n, err := relay.RelayOnce(ctx); n != 0 || err != nil {
		t.Errorf("second RelayOnce = %d, %v; want nothing more to publish", n, err)
	}
	// Stop the consumer, so that anything else in flight would be counted.
	stop()
	if got := mail.all(); len(got) != 1 {
		t.Errorf("order-mailer got %d facts, %+v; want the committed one once", len(got), got)
	}

	// A payload the schema refuses is not written, and the transaction is
	// still usable.
	bad := order("00000000-0000-4000-8000-00000000000c")
	bad.Customer.Email = ""
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := w.WriteOrderPlaced(ctx, tx, bad); err == nil {
		t.Error("WriteOrderPlaced accepted an order without a customer e-mail")
	}
}

const committedOrder = "00000000-0000-4000-8000-00000000000b"

func order(id string) cat.OrderPlaced {
	price := cat.Money{Amount: 1999, Currency: cat.CurrencyEUR}
	return cat.OrderPlaced{
		OrderID:  id,
		Customer: cat.OrderPlacedCustomer{CustomerID: "c-42", Email: "ada@example.com"},
		Lines:    []cat.OrderLine{{Sku: "BOOK-123", Quantity: 1, UnitPrice: price}},
		Total:    price,
		Payment:  cat.OrderPlacedPayment{InvoicePayment: &cat.InvoicePayment{Method: cat.InvoicePaymentMethodInvoice, DueDays: cat.InvoicePaymentDueDays30}},
		PlacedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
	}
}

// mailbox is an order-mailer that records what it receives.
type mailbox struct {
	mu  sync.Mutex
	got []mail
}

type mail struct{ id, orderID string }

func (m *mailbox) HandleOrderPlaced(_ context.Context, d runtime.Delivery, f cat.OrderPlaced) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, mail{d.MessageID, f.OrderID})
	return nil
}

func (m *mailbox) all() []mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mail(nil), m.got...)
}

func (m *mailbox) wait(t *testing.T, n int) []mail {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("%d facts at order-mailer", n), func() bool { return len(m.all()) >= n })
	return m.all()
}
