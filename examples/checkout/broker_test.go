package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	ev "github.com/warrenbus/warren/examples/checkout/checkoutevents"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// The checkout service on the real broker, with its instances in SQLite
// and in PostgreSQL: a paid order completes, an unpaid one is cancelled
// by its timeout and the mailer is told.
func TestCheckoutOnBroker(t *testing.T) {
	for _, c := range []struct {
		name    string
		dialect sqldb.Dialect
		open    func(t *testing.T) *sql.DB
	}{
		{"sqlite", sqldb.SQLite, func(t *testing.T) *sql.DB {
			return testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "checkout.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
		}},
		{"postgres", sqldb.Postgres, func(t *testing.T) *sql.DB { return testenv.OpenDB(t, "pgx", testenv.PGDSN(t)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := c.open(t)
			tables := Tables{Claims: testenv.TableName("claims"), Outbox: testenv.TableName("outbox"), Instances: testenv.TableName("sagas")}
			for _, tb := range []string{tables.Claims, tables.Outbox, tables.Outbox + "_seq", tables.Outbox + "_seq_source", tables.Instances} {
				testenv.DropTable(t, db, tb)
			}
			url := testenv.VHost(t, "warren-checkout")
			ctx, cancel := context.WithCancel(context.Background())
			conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &ev.Topology, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			parts, err := build(ctx, conn, db, c.dialect, tables, 20*time.Millisecond, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := &mailer{cancelled: make(chan string, 10)}
			mc, err := ev.NewOrderMailerConsumer(conn, m)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, r := range []interface{ Run(context.Context) error }{parts.Saga, parts.Relay, mc} {
				wg.Go(func() {
					if err := r.Run(ctx); err != nil {
						t.Errorf("run: %v", err)
					}
				})
			}
			t.Cleanup(func() { cancel(); wg.Wait(); conn.Close() })
			pub, err := ev.NewPublisher(conn)
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			// Paid first, placed second: either fact starts the instance.
			// The saga handles four facts at once, so the order is
			// waited for: placed handled first would start a payment
			// window of 20ms, which a loaded machine can let pass
			// before paid is handled.
			if _, err := pub.PublishOrderPaid(ctx, ev.OrderPaid{OrderID: "order-1", AmountCents: 2500}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "paid to start order-1", func() bool { return parts.Store.Stats().Started == 1 })
			if _, err := pub.PublishOrderPlaced(ctx, ev.OrderPlaced{OrderID: "order-1", TotalCents: 2500}); err != nil {
				t.Fatal(err)
			}
			if _, err := pub.PublishOrderPlaced(ctx, ev.OrderPlaced{OrderID: "order-2", TotalCents: 900}); err != nil {
				t.Fatal(err)
			}
			if id := <-m.cancelled; id != "order-2" {
				t.Errorf("cancelled %s; want order-2", id)
			}
			testenv.Eventually(t, "both instances to complete", func() bool { return parts.Store.Stats().Completed == 2 })
			if st := parts.Store.Stats(); st.Started != 2 || st.TimedOut != 1 {
				t.Errorf("stats %+v; want 2 started and 1 timed out", st)
			}
			select {
			case id := <-m.cancelled:
				t.Errorf("%s cancelled as well", id)
			default:
			}
		})
	}
}
