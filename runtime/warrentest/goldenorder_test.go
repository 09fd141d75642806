package warrentest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// The golden file lists facts by the virtual time they were published,
// and those of one instant by routing key, then payload, whatever order
// they left in: here the relay sends two rows due at the same instant in
// the order they were written (BOOK-9, then BOOK-1), after a fact the test
// published an hour before; testdata/one-instant.golden.json has the
// earlier fact first, then BOOK-1 and BOOK-9.
func TestGoldenOrdersTheFactsOfOneInstant(t *testing.T) {
	db := sqliteFile(t, "shop.db")
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		ctx := b.Context()
		ob := migratedOutbox(t, ctx, db)
		c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
			runtime.Handle(factItemUpdated, func(context.Context, runtime.Delivery, itemUpdated) error { return nil }),
			runtime.Handle(factItemDeleted, func(context.Context, runtime.Delivery, itemUpdated) error { return nil }),
		})
		b.Start("search-indexer", c, err)
		defer startRelay(t, b, db, outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: time.Hour}).Close()
		warrentest.Publish(b, factItemDeleted, itemUpdated{SKU: "BOOK-0"})
		for _, sku := range []string{"BOOK-9", "BOOK-1"} {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ob.In(time.Hour).Write(ctx, tx, factItemUpdated, itemUpdated{SKU: sku}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		b.Advance(time.Hour)
		var sent []string
		for _, m := range b.Published() {
			sent = append(sent, string(m.Payload()))
		}
		if want := fmt.Sprint([]string{`{"sku":"BOOK-0"}`, `{"sku":"BOOK-9"}`, `{"sku":"BOOK-1"}`}); fmt.Sprint(sent) != want {
			t.Fatalf("published %v; want %v, the relay's order (the test relies on it)", sent, want)
		}
		b.Golden("one-instant")
	})
}

// Two consumers of one fact each schedule a fact in the outbox for the
// same later instant, and the scheduler picks which writes first (so which
// row the relay sends first): the golden file is the same on every run.
func TestGoldenIsTheSameWhicheverConsumerWritesFirst(t *testing.T) {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "billing", Bindings: []string{"catalogue.item.updated"}},
		{Name: "shipping", Bindings: []string{"catalogue.item.updated"}},
		{Name: "audit", Bindings: []string{"catalogue.*.due"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for run := range 12 {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			db := sqliteFile(t, "shop.db")
			db.SetMaxOpenConns(1) // the writers wait for the connection, not for SQLite's lock (which sleeps, and moves the clock)
			warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
				ctx := b.Context()
				ob := migratedOutbox(t, ctx, db)
				schedule := func(f runtime.Fact) func(context.Context, runtime.Delivery, itemUpdated) error {
					return func(ctx context.Context, _ runtime.Delivery, v itemUpdated) error {
						tx, err := db.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						defer tx.Rollback() //nolint:errcheck // a no-op after Commit
						if _, err := ob.In(time.Hour).Write(ctx, tx, f, v); err != nil {
							return err
						}
						return tx.Commit()
					}
				}
				for name, f := range map[string]runtime.Fact{"billing": factInvoiceDue, "shipping": factDispatchDue} {
					cons, _ := top.Consumer(name)
					c, err := runtime.NewConsumer(b.Conn(), cons, []runtime.Route{runtime.Handle(factItemUpdated, schedule(f))})
					b.Start(name, c, err)
				}
				audit, _ := top.Consumer("audit")
				nothing := func(context.Context, runtime.Delivery, itemUpdated) error { return nil }
				c, err := runtime.NewConsumer(b.Conn(), audit, []runtime.Route{runtime.Handle(factInvoiceDue, nothing), runtime.Handle(factDispatchDue, nothing)})
				b.Start("audit", c, err)
				defer startRelay(t, b, db, outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: time.Hour}).Close()
				warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-7"})
				b.Settle()
				b.Advance(time.Hour)
				b.WantHandled("audit", 2)
				b.Golden("two-writers")
			})
		})
	}
}

var (
	factItemDeleted = runtime.Fact{RoutingKey: "catalogue.item.deleted", Version: 1}
	factInvoiceDue  = runtime.Fact{RoutingKey: "catalogue.invoice.due", Version: 1}
	factDispatchDue = runtime.Fact{RoutingKey: "catalogue.dispatch.due", Version: 1}
)
