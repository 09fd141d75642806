package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/topology"
)

// A park is kept per consumer and key; the first fact a key is parked
// behind stays; lifting it frees the key.
func TestSQLGuardKeepsParks(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		g := newParkGuard(t, db, d)
		ctx := context.Background()
		if _, parked, err := g.ParkedBehind(ctx, "c", "k"); err != nil || parked {
			t.Fatalf("before any park: parked %v, %v", parked, err)
		}
		for _, id := range []string{"m1", "m2"} {
			if err := g.Park(ctx, "c", "k", id); err != nil {
				t.Fatal(err)
			}
		}
		if id, parked, err := g.ParkedBehind(ctx, "c", "k"); err != nil || !parked || id != "m1" {
			t.Errorf("parked behind %q, %v, %v; want m1, the first", id, parked, err)
		}
		if _, parked, _ := g.ParkedBehind(ctx, "other", "k"); parked {
			t.Error("another consumer's key k is parked too")
		}
		if err := g.Unpark(ctx, "c", "k"); err != nil {
			t.Fatal(err)
		}
		if _, parked, err := g.ParkedBehind(ctx, "c", "k"); err != nil || parked {
			t.Errorf("after Unpark: parked %v, %v", parked, err)
		}
	})
}

// parcel is an ordered fact: its order is the ordering key.
type parcel struct {
	Order string `json:"order"`
	N     int    `json:"n"`
}

var factParcel = runtime.Fact{RoutingKey: "order.parcel", Version: 1, OrderingKey: "/order"}

// An ordered consumer with onPoison park and an SQL guard parks a key in
// the database: after the instance that parked it stops, another one (a
// new guard on the same table) still sends the key's later facts to poison
// behind the first, while other keys are handled.
func TestParkOutlivesTheInstanceThatMadeIt(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		b := newBroker(t, topology.ConsumerSpec{Name: "durablepark", Ordered: true, Shards: 1, MaxAttempts: 1, Park: true, Backoff: testLadder})
		g := newParkGuard(t, db, d)
		pub, err := runtime.NewPublisher(b.conn, b.events)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var handled []parcel
		start := func(g runtime.Guard) (stop func()) {
			c, err := runtime.NewConsumer(b.dial(), b.consumer, []runtime.Route{runtime.Handle(factParcel, func(ctx context.Context, _ runtime.Delivery, p parcel) error {
				if p.Order == "k" && p.N == 0 {
					return runtime.Permanent(errors.New("this parcel can never be sent"))
				}
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, p)
				return nil
			})}, runtime.WithGuard(g))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			return func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("consumer: %v", err)
				}
			}
		}
		publish := func(p parcel) string {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			id, err := pub.Publish(ctx, factParcel, p)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}

		stopFirst := start(g)
		head := publish(parcel{Order: "k", N: 0})
		testenv.Eventually(t, "the first fact poisoned", func() bool { return b.poisonDepth() >= 1 })
		stopFirst()
		if id, parked, err := g.ParkedBehind(context.Background(), b.consumer.Name, "k"); err != nil || !parked || id != head {
			t.Fatalf("key k parked behind %q (%v, %v); want %s", id, parked, err, head)
		}

		again, err := idempotency.NewSQLGuard(db, idempotency.SQLConfig{Dialect: d, Table: g.Table()})
		if err != nil {
			t.Fatal(err)
		}
		stopSecond := start(again)
		defer stopSecond()
		publish(parcel{Order: "k", N: 1})
		publish(parcel{Order: "j", N: 0})
		testenv.Eventually(t, "key k's later fact in poison", func() bool { return b.poisonDepth() >= 2 })
		testenv.Eventually(t, "key j handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) >= 1 })
		mu.Lock()
		defer mu.Unlock()
		for _, p := range handled {
			if p.Order == "k" {
				t.Errorf("the second instance handled %+v of the parked key k", p)
			}
		}
		if n := b.poisonDepth(); n != 2 {
			t.Errorf("poison holds %d, want the poisoned fact and the one parked behind it", n)
		}
	})
}

// newParkGuard is newGuard that also drops the parks table.
func newParkGuard(t *testing.T, db *sql.DB, d idempotency.Dialect) *idempotency.SQLGuard {
	t.Helper()
	g := newGuard(t, db, idempotency.SQLConfig{Dialect: d, Table: testenv.TableName("claims")})
	testenv.DropTable(t, db, g.Table()+"_parked")
	return g
}
