package warrentest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

type orderDue struct {
	ID string `json:"id"`
}

var (
	factPaymentDue  = runtime.Fact{RoutingKey: "order.payment-due", Version: 1}
	factReminderDue = runtime.Fact{RoutingKey: "order.reminder-due", Version: 1}
)

// reminders starts, on b, a consumer "orders" that answers each
// order.placed as a service with a payment window does: in one
// transaction it schedules order.payment-due in its outbox (SQLite, its
// relay on the bus) for 30 minutes later, and it asks the broker to
// deliver order.reminder-due a day later (Publisher.In); and a consumer
// "watch" of both, whose handlers return at once.
func reminders(t *testing.T, b *warrentest.Bus, top topology.Topology, db *sql.DB) {
	t.Helper()
	ctx := b.Context()
	ob := migratedOutbox(t, ctx, db)
	pub, err := runtime.NewPublisher(b.Conn(), top.Exchanges[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	orders, _ := top.Consumer("orders")
	c, err := runtime.NewConsumer(b.Conn(), orders, []runtime.Route{
		runtime.Handle(factOrderPlaced, func(ctx context.Context, d runtime.Delivery, v orderPlaced) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // a no-op after Commit
			if _, err := ob.In(30*time.Minute).Write(ctx, tx, factPaymentDue, orderDue{ID: v.ID}); err != nil {
				return err
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			_, err = pub.In(24*time.Hour).Publish(ctx, factReminderDue, orderDue{ID: v.ID})
			return err
		}),
	})
	b.Start("orders", c, err)
	watch, _ := top.Consumer("watch")
	nothing := func(context.Context, runtime.Delivery, orderDue) error { return nil }
	c, err = runtime.NewConsumer(b.Conn(), watch, []runtime.Route{
		runtime.Handle(factPaymentDue, nothing),
		runtime.Handle(factReminderDue, nothing),
	})
	b.Start("watch", c, err)
	relayPub := startRelay(t, b, db, outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: time.Hour})
	t.Cleanup(func() { _ = relayPub.Close() })
}

func remindersTopology(t *testing.T) topology.Topology {
	t.Helper()
	top, err := topology.Build(topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "orders", Bindings: []string{"order.placed"}},
		{Name: "watch", Bindings: []string{"order.payment-due", "order.reminder-due"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// routingKeys are the routing keys of consumer's handled facts, in order.
func routingKeys(b *warrentest.Bus, consumer string) []string {
	var out []string
	for _, c := range b.Handled(consumer) {
		out = append(out, c.RoutingKey)
	}
	return out
}

// Settle runs what is due now and leaves the clock where it is: the
// order is handled, while the reminder the broker holds for a day and
// the payment timeout the outbox holds for 30 minutes stay due later, so
// a test can advance to just before the timeout and see it not fire.
func TestSettleLeavesTheClockAlone(t *testing.T) {
	top := remindersTopology(t)
	db := sqliteFile(t, "orders.db")
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		reminders(t, b, top, db)
		start := time.Now()
		warrentest.Publish(b, factOrderPlaced, orderPlaced{ID: "o-1"})
		b.Settle()
		if moved := time.Since(start); moved != 0 {
			t.Errorf("Settle moved the clock by %s", moved)
		}
		b.WantHandled("orders", 1)
		b.WantHandled("watch", 0)
		b.Advance(30*time.Minute - time.Millisecond)
		b.WantHandled("watch", 0)
		b.Advance(time.Millisecond)
		if got := routingKeys(b, "watch"); len(got) != 1 || got[0] != "order.payment-due" {
			t.Fatalf("after 30 minutes watch handled %v; want the payment timeout alone", got)
		}
		b.Advance(24*time.Hour - 30*time.Minute)
		if got := routingKeys(b, "watch"); len(got) != 2 || got[1] != "order.reminder-due" {
			t.Errorf("after a day watch handled %v; want the reminder too", got)
		}
	})
}

// Idle, as documented, moves the clock to the last thing the bus holds
// for later, the reminder a day ahead, and what falls due on the way off
// the bus, the outbox's payment timeout, is published and handled inside
// it.
func TestIdleRunsTheClockToWhatTheBusHoldsForLater(t *testing.T) {
	top := remindersTopology(t)
	db := sqliteFile(t, "orders.db")
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		reminders(t, b, top, db)
		start := time.Now()
		warrentest.Publish(b, factOrderPlaced, orderPlaced{ID: "o-1"})
		b.Idle()
		if moved := time.Since(start); moved != 24*time.Hour {
			t.Errorf("Idle moved the clock by %s; want to the reminder, 24h", moved)
		}
		if got := routingKeys(b, "watch"); len(got) != 2 || got[0] != "order.payment-due" || got[1] != "order.reminder-due" {
			t.Errorf("watch handled %v; want the payment timeout, then the reminder", got)
		}
	})
}

// Settle in real time waits for what is due now, as Idle does, but not
// for a retry an hour ahead, which Idle would wait for (and give up on
// after its patience).
func TestSettleInRealTimeLeavesARetryWaiting(t *testing.T) {
	b := warrentest.New(t, shop(t, time.Hour))
	warrentest.Register[itemUpdated](b, factItemUpdated)
	c, err := runtime.NewConsumer(b.Conn(), b.Topology().Consumers[0], []runtime.Route{
		runtime.Handle(factItemUpdated, func(ctx context.Context, d runtime.Delivery, v itemUpdated) error {
			if v.SKU == "BOOK-FAIL" {
				return errors.New("index down")
			}
			return nil
		}),
	})
	b.Start("search-indexer", c, err)
	warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-FAIL"})
	warrentest.Publish(b, factItemUpdated, itemUpdated{SKU: "BOOK-1"})
	start := time.Now()
	b.Settle()
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("Settle took %s", waited)
	}
	b.WantHandled("search-indexer", 1)
	b.WantRetried("search-indexer", 1)
	if n := len(b.Waiting(b.Topology().Consumers[0].Tiers[0].Queue)); n != 1 {
		t.Errorf("%d facts in the retry queue; want the failed one, waiting its hour", n)
	}
}
