package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	ev "github.com/warrenbus/warren/examples/checkout/checkoutevents"
	"github.com/warrenbus/warren/examples/checkout/checkoutevents/checkouteventstest"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// The saga in virtual time on the test kit's bus, its instances in
// SQLite: an order paid within its window completes and its timeout never
// fires; one paid only in part is cancelled when the window ends, exactly
// then, and the mailer hears of it.
func TestCheckoutInVirtualTime(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "checkout.db")+"?_pragma=busy_timeout(5000)")
	checkouteventstest.Run(t, func(t *testing.T, k *checkouteventstest.Kit) {
		const window = 30 * time.Minute
		parts, err := buildOnKit(k, db, window)
		if err != nil {
			t.Fatal(err)
		}
		k.StartCheckoutSaga(parts.Store, checkout{payWithin: window})
		k.Start("relay", parts.Relay, nil)
		k.StartOrderMailer(&mailer{cancelled: make(chan string, 10)})
		start := time.Now()

		k.PublishOrderPlaced(ev.OrderPlaced{OrderID: "order-1", TotalCents: 2500})
		k.PublishOrderPlaced(ev.OrderPlaced{OrderID: "order-2", TotalCents: 900})
		// Settle, not Idle: the clock stays at the orders, so the checks
		// below count from them. Idle would move it to anything the bus
		// holds for later (a reminder published with pub.In, say), and
		// the payment window's timeout would fire inside it.
		k.Settle()
		if moved := time.Since(start); moved != 0 {
			t.Fatalf("Settle moved the clock by %s", moved)
		}
		k.Advance(10 * time.Minute)
		k.PublishOrderPaid(ev.OrderPaid{OrderID: "order-1", AmountCents: 1000})
		k.PublishOrderPaid(ev.OrderPaid{OrderID: "order-2", AmountCents: 900})
		k.Advance(window - 10*time.Minute - time.Second)
		if got := checkouteventstest.Published[ev.OrderCancelled](k); len(got) != 0 {
			t.Fatalf("cancelled %+v before the window ended", got)
		}
		k.Advance(time.Second)
		k.Idle()
		got := checkouteventstest.Published[ev.OrderCancelled](k)
		if len(got) != 1 || got[0].OrderID != "order-1" || got[0].Reason != ev.OrderCancelledReasonUnpaid {
			t.Fatalf("cancelled %+v; want order-1 alone, unpaid", got)
		}
		if at := time.Since(start); at < window {
			t.Errorf("cancelled %s after the order; want the window, %s", at, window)
		}
		k.WantHandled(checkouteventstest.OrderMailer, 1)
		if st := parts.Store.Stats(); st.Started != 2 || st.Completed != 2 || st.TimedOut != 1 || st.LateTimeouts != 0 {
			t.Errorf("stats %+v; want 2 started, 2 completed, 1 timed out and no late timeout (order-2's was cancelled)", st)
		}
		k.WantPoisoned(checkouteventstest.CheckoutSaga, 0)
	})
}

// A payment published around its schema's generated code, without the
// order id the saga finds its instance by, goes to poison at once, saying
// why; nothing is started.
func TestCheckoutPoisonsAFactWithoutItsCorrelation(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "checkout.db")+"?_pragma=busy_timeout(5000)")
	checkouteventstest.Run(t, func(t *testing.T, k *checkouteventstest.Kit) {
		parts, err := buildOnKit(k, db, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		k.StartCheckoutSaga(parts.Store, checkout{payWithin: time.Hour})
		k.PublishRaw(ev.OrderPaidRoutingKey, []byte(`{"amount_cents": 100}`))
		k.Idle()
		poisoned := k.Poisoned(checkouteventstest.CheckoutSaga)
		if len(poisoned) != 1 {
			t.Fatalf("%d facts poisoned; want the payment", len(poisoned))
		}
		// The schema's check comes first: the correlation is a required
		// property, which warren generate made sure of.
		if f := poisoned[0].Failure; !strings.Contains(f, "order_id") {
			t.Errorf("x-failure %q; want it to name the missing order_id", f)
		}
		if st := parts.Store.Stats(); st.Started != 0 {
			t.Errorf("stats %+v; want nothing started", st)
		}
	})
}

// A completed order is kept for the manifest's keepCompleted (72h), then
// removed by the store's pruning; a running one stays.
func TestCheckoutPrunesCompletedOrders(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "checkout.db")+"?_pragma=busy_timeout(5000)")
	checkouteventstest.Run(t, func(t *testing.T, k *checkouteventstest.Kit) {
		parts, err := buildOnKit(k, db, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		k.StartCheckoutSaga(parts.Store, checkout{payWithin: time.Hour})
		go parts.Store.PruneEvery(k.Context(), time.Hour, func(err error) { t.Errorf("prune: %v", err) })
		k.PublishOrderPlaced(ev.OrderPlaced{OrderID: "paid", TotalCents: 100})
		k.PublishOrderPaid(ev.OrderPaid{OrderID: "paid", AmountCents: 100})
		k.PublishOrderPaid(ev.OrderPaid{OrderID: "running", AmountCents: 50})
		k.Idle()
		admin, err := saga.NewAdmin(sqldb.FromSQL(db), sqldb.SQLite, "sagas", nil)
		if err != nil {
			t.Fatal(err)
		}
		instances := func() (out []string) {
			rows, err := admin.List(k.Context(), "checkout", 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				out = append(out, r.Instance)
			}
			return out
		}
		k.Advance(71 * time.Hour)
		if got := instances(); len(got) != 2 {
			t.Fatalf("instances after 71h: %v; want both kept", got)
		}
		k.Advance(2 * time.Hour)
		if got := instances(); len(got) != 1 || got[0] != "running" {
			t.Errorf("instances after 73h: %v; want the running one alone", got)
		}
	})
}

// A timeout that fires after its instance is gone (removed here without
// cancelling it) is dropped and counted, not handled.
func TestCheckoutDropsALateTimeout(t *testing.T) {
	db := testenv.OpenDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "checkout.db")+"?_pragma=busy_timeout(5000)")
	checkouteventstest.Run(t, func(t *testing.T, k *checkouteventstest.Kit) {
		parts, err := buildOnKit(k, db, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		k.StartCheckoutSaga(parts.Store, checkout{payWithin: 30 * time.Minute})
		k.Start("relay", parts.Relay, nil)
		k.PublishOrderPlaced(ev.OrderPlaced{OrderID: "order-1", TotalCents: 2500})
		k.Idle()
		admin, err := saga.NewAdmin(sqldb.FromSQL(db), sqldb.SQLite, "sagas", nil) // no outbox: its timeout stays
		if err != nil {
			t.Fatal(err)
		}
		if deleted, err := admin.Delete(k.Context(), "checkout", "order-1"); !deleted || err != nil {
			t.Fatalf("Delete = %v, %v", deleted, err)
		}
		k.Advance(31 * time.Minute)
		k.Idle()
		if st := parts.Store.Stats(); st.LateTimeouts != 1 || st.TimedOut != 0 || st.Ignored != 0 {
			t.Errorf("stats %+v; want the timeout dropped as late, not handled", st)
		}
		if got := checkouteventstest.Published[ev.OrderCancelled](k); len(got) != 0 {
			t.Errorf("cancelled %+v for an order that is gone", got)
		}
		k.WantPoisoned(checkouteventstest.CheckoutSaga, 0)
	})
}

// kitRelayPoll is the relay's poll in the kit's virtual time: an hour, as
// docs/TESTING.md advises. The relay is woken by each write to the outbox
// and sleeps until the next scheduled row is due, or a refused one may be
// tried again, so nothing arrives later; with the default poll (500ms) each poll would be a real query on
// every virtual half second.
const kitRelayPoll = time.Hour

// buildOnKit is build on the kit's bus, its tables in db (SQLite).
func buildOnKit(k *checkouteventstest.Kit, db *sql.DB, payWithin time.Duration) (*Parts, error) {
	return build(k.Context(), k.Conn(), db, sqldb.SQLite, Tables{Claims: "claims", Outbox: "outbox", Instances: "sagas"}, payWithin, kitRelayPoll)
}

// The relay the kit tests start does not poll the table every virtual
// half second: over a payment window of 30 virtual minutes it claims a
// handful of times (woken by the saga's writes, and once the timeout is
// due), not thousands.
func TestCheckoutKitRelayDoesNotPoll(t *testing.T) {
	claims := &atomic.Int64{}
	db := openCountingSQLite(t, "file:"+filepath.Join(t.TempDir(), "checkout.db")+"?_pragma=busy_timeout(5000)", claims)
	checkouteventstest.Run(t, func(t *testing.T, k *checkouteventstest.Kit) {
		const window = 30 * time.Minute
		parts, err := buildOnKit(k, db, window)
		if err != nil {
			t.Fatal(err)
		}
		k.StartCheckoutSaga(parts.Store, checkout{payWithin: window})
		k.Start("relay", parts.Relay, nil)
		k.PublishOrderPlaced(ev.OrderPlaced{OrderID: "order-1", TotalCents: 2500})
		k.Idle()
		k.Advance(window)
		k.Idle()
		if got := checkouteventstest.Published[ev.OrderCancelled](k); len(got) != 1 {
			t.Fatalf("cancelled %+v; want order-1, once its window passed", got)
		}
		t.Logf("the relay claimed %d times over %s of virtual time", claims.Load(), window)
		if n := claims.Load(); n > 20 {
			t.Errorf("the relay claimed %d times over %s of virtual time; want a handful: it polls every %s", n, window, outbox.DefaultPollInterval)
		}
	})
}

// openCountingSQLite opens an SQLite database whose connections count in
// claims the outbox relay's claims of unscheduled rows (one per round).
func openCountingSQLite(t *testing.T, dsn string, claims *atomic.Int64) *sql.DB {
	t.Helper()
	plain := testenv.OpenDB(t, "sqlite", dsn)
	db := sql.OpenDB(countingConnector{dsn: dsn, d: plain.Driver(), claims: claims})
	t.Cleanup(func() { _ = db.Close() })
	return db
}

type countingConnector struct {
	dsn    string
	d      driver.Driver
	claims *atomic.Int64
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, claims: c.claims}, nil
}

func (c countingConnector) Driver() driver.Driver { return c.d }

// countingConn passes everything on to an SQLite connection, counting the
// claims it sees.
type countingConn struct {
	driver.Conn
	claims *atomic.Int64
}

func (c *countingConn) count(query string) {
	if strings.HasPrefix(query, "SELECT id, routing_key") && strings.Contains(query, "ORDER BY id LIMIT") {
		c.claims.Add(1)
	}
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.count(query)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.count(query)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}
