package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	ev "github.com/warrenbus/warren/examples/checkout/checkoutevents"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Tables names the service's tables: the guard's claims, the outbox and
// the saga's instances, all in one database.
type Tables struct {
	Claims, Outbox, Instances string
}

// Parts are what the checkout service runs: the saga's consumer and the
// outbox relay that publishes what the saga publishes and schedules.
type Parts struct {
	Store  *saga.Store
	Saga   *runtime.Consumer
	Relay  *outbox.Relay
	Outbox *ev.OutboxWriter
}

// build makes the service's parts over db and creates their tables. A
// customer has payWithin to pay an order. relayPoll is how often the
// outbox relay looks for rows when nothing woke it: 0 for the relay's
// default (outbox.DefaultPollInterval), which a real run uses; a test in
// the kit's virtual time passes an hour, since the relay is woken by each
// write and sleeps until the next scheduled row falls due, and a short
// poll would cost a real query every virtual half second
// (docs/TESTING.md).
func build(ctx context.Context, conn *runtime.Conn, db *sql.DB, d sqldb.Dialect, t Tables, payWithin, relayPoll time.Duration) (*Parts, error) {
	txDB := sqldb.FromSQL(db)
	guard, err := idempotency.NewSQLGuardDB(txDB, idempotency.SQLConfig{Dialect: d, Table: t.Claims})
	if err != nil {
		return nil, err
	}
	w, err := ev.NewOutboxWriter(outbox.Config{Dialect: d, Table: t.Outbox})
	if err != nil {
		return nil, err
	}
	store, err := saga.NewStore(txDB, saga.Config{Dialect: d, Table: t.Instances, Guard: guard, Outbox: w.Outbox()})
	if err != nil {
		return nil, err
	}
	for _, migrate := range []func(context.Context) error{
		guard.Migrate,
		func(ctx context.Context) error { return w.Outbox().MigrateDB(ctx, txDB) },
		store.Migrate,
	} {
		if err := migrate(ctx); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	c, err := ev.NewCheckoutSaga(conn, store, checkout{payWithin: payWithin})
	if err != nil {
		return nil, err
	}
	relay, err := ev.NewOutboxRelay(txDB, conn, outbox.RelayConfig{Dialect: d, Table: t.Outbox, PollInterval: relayPoll})
	if err != nil {
		return nil, err
	}
	return &Parts{Store: store, Saga: c, Relay: relay, Outbox: w}, nil
}
