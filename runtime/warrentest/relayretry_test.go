package warrentest_test

import (
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

// A fact the bus refuses (no queue binds it) is tried again by a relay
// that polls once an hour, as the kit's relays do, when its retry time
// comes: after 1s, 2s and 4s, so 4 tries in 10 virtual seconds, not one
// try and then a wait for the poll.
func TestOutboxRelayRetriesARefusedFactOnItsBackoff(t *testing.T) {
	db := sqliteFile(t, "shop.db")
	warrentest.Run(t, shop(t, time.Second), func(t *testing.T, b *warrentest.Bus) {
		ctx := b.Context()
		ob := migratedOutbox(t, ctx, db)
		pub, err := runtime.NewPublisher(b.Conn(), topology.DefaultExchanges.Events)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Dialect: outbox.SQLite, PollInterval: time.Hour})
		b.Start("outbox relay", relay, err)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ob.Write(ctx, tx, runtime.Fact{RoutingKey: "nobody.listens", Version: 1}, itemUpdated{SKU: "BOOK-1"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Advance(10 * time.Second)
		if st := relay.Stats(); st.Failed != 4 || st.Unroutable != 4 {
			t.Errorf("after 10s: %+v; want 4 tries, at 0s, 1s, 3s and 7s", st)
		}
	})
}
