package golden_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	sagas "github.com/warrenbus/warren/golden/sagas/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/saga"
	"github.com/warrenbus/warren/runtime/sqldb"
)

// Instances (fewer on the targets that set WARREN_TEST_LOAD: see
// testenv.Load) and facts of the concurrency test.
const (
	concurrentInstances = 1000
	paymentsPerInstance = 4 // and one order.placed: five facts each
)

// TestSagaConcurrentInstances sends 1,000 orders five facts each (placed
// and four payments) in random order, interleaved across orders, to two
// service instances of the saga on PostgreSQL, each handling 8 facts at a
// time. Every order must end paid, with exactly the sum of its payments
// and version 5 (one write per fact): an update lost to a concurrent
// handling of the same order would leave a payment out.
func TestSagaConcurrentInstances(t *testing.T) {
	sagaConcurrentInstances(t, []string{testenv.VHost(t, "warren-saga-load")})
}

// TestClusterSagaConcurrentInstances is the same on a three-node RabbitMQ
// 4 cluster (make test-cluster), in a vhost of its own, each service
// instance given every node's URL.
func TestClusterSagaConcurrentInstances(t *testing.T) {
	c := testenv.NewCluster(t)
	vhost := testenv.Name("warren-saga-cluster")
	node := c.Nodes[0].Name
	c.Ctl(t, node, "add_vhost", vhost)
	t.Cleanup(func() { c.Ctl(t, node, "delete_vhost", vhost) })
	var urls []string
	for _, u := range c.URLs() {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		c.Ctl(t, node, "set_permissions", "-p", vhost, parsed.User.Username(), ".*", ".*", ".*")
		parsed.Path = "/" + vhost
		urls = append(urls, parsed.String())
	}
	sagaConcurrentInstances(t, urls)
}

func sagaConcurrentInstances(t *testing.T, urls []string) {
	instances := int64(testenv.Load(t, concurrentInstances, 100))
	pg := testenv.OpenDB(t, "pgx", testenv.PGDSN(t))
	db := sqldb.FromSQL(pg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claims, boxTable, instTable := testenv.TableName("claims"), testenv.TableName("outbox"), testenv.TableName("sagas")
	for _, tb := range []string{claims, boxTable, boxTable + "_seq", boxTable + "_seq_source", instTable} {
		testenv.DropTable(t, pg, tb)
	}

	var stores []*saga.Store
	var conn *runtime.Conn
	// events counts every delivery event of both service instances, each
	// with its connection, guard and store.
	events := &sagaEvents{counts: map[string]int{}}
	for i := range 2 {
		c, err := runtime.Dial(ctx, runtime.Config{URLs: urls, Topology: &sagas.Topology, Metrics: events, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		guard, err := idempotency.NewSQLGuardDB(db, idempotency.SQLConfig{Dialect: sqldb.Postgres, Table: claims})
		if err != nil {
			t.Fatal(err)
		}
		w, err := sagas.NewOutboxWriter(outbox.Config{Dialect: sqldb.Postgres, Table: boxTable})
		if err != nil {
			t.Fatal(err)
		}
		store, err := saga.NewStore(db, saga.Config{Dialect: sqldb.Postgres, Table: instTable, Guard: guard, Outbox: w.Outbox()})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			for _, m := range []func(context.Context) error{guard.Migrate, func(ctx context.Context) error { return w.Outbox().MigrateDB(ctx, db) }, store.Migrate} {
				if err := m(ctx); err != nil {
					t.Fatal(err)
				}
			}
			conn = c
		}
		sc, err := sagas.NewCheckoutSaga(c, store, checkout{})
		if err != nil {
			t.Fatal(err)
		}
		runConsumer(t, sc)
		stores = append(stores, store)
	}

	type send struct {
		order   string
		placed  bool
		payment int64
	}
	var sends []send
	total := map[string]int64{}
	for i := range instances {
		order := fmt.Sprintf("load-%04d", i)
		sends = append(sends, send{order: order, placed: true})
		for p := range paymentsPerInstance {
			amount := int64(100 + p)
			total[order] += amount
			sends = append(sends, send{order: order, payment: amount})
		}
	}
	// Shuffled within windows of a few instances' facts, not across all of
	// them: the facts of one instance then arrive close together, so that
	// two of them are handled at the same time (and conflict) however fast
	// the consumers keep up with the publisher; shuffled across all 5,000,
	// a quiet machine's consumers handled each fact before the next of its
	// instance came, and no two handlings met.
	const window = 10 * (1 + paymentsPerInstance)
	for lo := 0; lo < len(sends); lo += window {
		w := sends[lo:min(lo+window, len(sends))]
		rand.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	}
	pub, err := sagas.NewPublisher(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	for _, s := range sends {
		if s.placed {
			_, err = pub.PublishOrderPlaced(ctx, sagas.OrderPlaced{OrderID: s.order, TotalCents: total[s.order]})
		} else {
			_, err = pub.PublishOrderPaid(ctx, sagas.OrderPaid{OrderID: s.order, AmountCents: s.payment})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	completed := func() int64 {
		var n int64
		for _, s := range stores {
			n += s.Stats().Completed
		}
		return n
	}
	testenv.Eventually(t, "every order to complete", func() bool { return completed() >= instances })

	rows, err := pg.QueryContext(ctx, fmt.Sprintf(`SELECT instance, version, state, completed_at IS NOT NULL FROM %q WHERE saga = 'checkout'`, instTable))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var id, state string
		var version int64
		var done bool
		if err := rows.Scan(&id, &version, &state, &done); err != nil {
			t.Fatal(err)
		}
		seen++
		want := fmt.Sprintf(`"paid_cents":%d`, total[id])
		if version != 1+paymentsPerInstance || !done || !strings.Contains(state, `"status":"paid"`) || !strings.Contains(state, want) {
			t.Errorf("order %s: version %d, completed %v, state %s; want version %d, paid %d, complete", id, version, done, state, 1+paymentsPerInstance, total[id])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if int64(seen) != instances {
		t.Errorf("%d instances stored; want %d", seen, instances)
	}
	var conflicts, started int64
	for _, s := range stores {
		conflicts += s.Stats().Conflicts
		started += s.Stats().Started
	}
	if started != instances || completed() != instances {
		t.Errorf("started %d, completed %d; want %d of each", started, completed(), instances)
	}
	t.Logf("%d facts, %d conflicts retried on the new state", len(sends), conflicts)
	// A conflict is handled again inside its transaction: it spends none
	// of the fact's attempts.
	for _, e := range []runtime.Event{runtime.Retried, runtime.Poisoned} {
		for _, key := range []string{sagas.OrderPlacedRoutingKey, sagas.OrderPaidRoutingKey} {
			if n := events.of(e, key); n != 0 {
				t.Errorf("%d %s %s facts; want none: conflicts must not spend attempts", n, e, key)
			}
		}
	}
	if conflicts == 0 {
		t.Error("no conflict was counted: the test did not make two handlings of one instance meet")
	}
}
