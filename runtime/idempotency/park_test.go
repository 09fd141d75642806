package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// SQL guards keep the parks of ordered consumers.
var _ runtime.ParkStore = (*idempotency.SQLGuard)(nil)

// A park is kept per consumer and key; the first fact a key is parked
// behind stays, with the replays it had; its confirmation is recorded for
// that fact only; lifting it frees the key.
func TestSQLGuardKeepsParks(t *testing.T) {
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		g := newParkGuard(t, db, d)
		ctx := context.Background()
		if id, _, _, err := g.ParkedBehind(ctx, "c", "k"); err != nil || id != "" {
			t.Fatalf("before any park: parked behind %q, %v", id, err)
		}
		for i, id := range []string{"m1", "m2"} {
			if err := g.Park(ctx, "c", "k", id, 2+i); err != nil {
				t.Fatal(err)
			}
		}
		if id, n, poisoned, err := g.ParkedBehind(ctx, "c", "k"); err != nil || id != "m1" || n != 2 || poisoned {
			t.Errorf("parked behind %q (replays %d, confirmed %v, %v); want m1, the first, replays 2, unconfirmed", id, n, poisoned, err)
		}
		if err := g.ConfirmPark(ctx, "c", "k", "m2"); err != nil {
			t.Fatal(err)
		}
		if _, _, poisoned, _ := g.ParkedBehind(ctx, "c", "k"); poisoned {
			t.Error("confirming m2 confirmed the park behind m1")
		}
		if err := g.ConfirmPark(ctx, "c", "k", "m1"); err != nil {
			t.Fatal(err)
		}
		if id, n, poisoned, err := g.ParkedBehind(ctx, "c", "k"); err != nil || id != "m1" || n != 2 || !poisoned {
			t.Errorf("after ConfirmPark: parked behind %q (replays %d, confirmed %v, %v); want m1, replays 2, confirmed", id, n, poisoned, err)
		}
		if id, _, _, _ := g.ParkedBehind(ctx, "other", "k"); id != "" {
			t.Error("another consumer's key k is parked too")
		}
		if err := g.Unpark(ctx, "c", "k"); err != nil {
			t.Fatal(err)
		}
		if id, _, _, err := g.ParkedBehind(ctx, "c", "k"); err != nil || id != "" {
			t.Errorf("after Unpark: parked behind %q, %v", id, err)
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
		if id, _, poisoned, err := g.ParkedBehind(context.Background(), b.consumer.Name, "k"); err != nil || id != head || !poisoned {
			t.Fatalf("key k parked behind %q (confirmed %v, %v); want %s, its poison copy confirmed", id, poisoned, err, head)
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

// The poisoned fact a key is parked behind, delivered again as it was (its
// ack lost after its poison copy was confirmed), is acked as in poison
// already: no second copy, and the key stays parked, its later fact
// following it to poison. Replayed from poison, it lifts the park and is
// handled, the later fact after it. With an SQL guard the park lives in
// the database; without one, in memory.
func TestOnlyAReplayLiftsAPark(t *testing.T) {
	test := func(t *testing.T, guard func() (runtime.Guard, runtime.ParkStore)) {
		b := newBroker(t, topology.ConsumerSpec{Name: "replaypark", Ordered: true, Shards: 1, MaxAttempts: 1, Park: true, Backoff: testLadder})
		pub, err := runtime.NewPublisher(b.conn, b.events)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		fixed := false
		var handled []string
		opts := []runtime.ConsumerOption{}
		g, store := guard()
		if g != nil {
			opts = append(opts, runtime.WithGuard(g))
		}
		conn := b.dial()
		c, err := runtime.NewConsumer(conn, b.consumer, []runtime.Route{runtime.Handle(factParcel, func(ctx context.Context, _ runtime.Delivery, p parcel) error {
			mu.Lock()
			defer mu.Unlock()
			if p.Order == "k" && p.N == 0 && !fixed {
				return runtime.Permanent(errors.New("this parcel cannot be sent yet"))
			}
			handled = append(handled, fmt.Sprintf("%s%d", p.Order, p.N))
			return nil
		})}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("consumer: %v", err)
			}
		}()
		publish := func(env runtime.Envelope) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pub.PublishEnvelope(ctx, factParcel, env); err != nil {
				t.Fatal(err)
			}
		}
		head, err := runtime.NewEnvelope(parcel{Order: "k", N: 0})
		if err != nil {
			t.Fatal(err)
		}
		later, err := runtime.NewEnvelope(parcel{Order: "k", N: 1})
		if err != nil {
			t.Fatal(err)
		}

		publish(head)
		testenv.Eventually(t, "the head poisoned", func() bool { return b.poisonDepth() >= 1 })
		publish(head) // the same fact, as a redelivery brings it: same id, not replayed
		publish(later)
		testenv.Eventually(t, "the later fact parked in poison", func() bool { return b.poisonDepth() >= 2 })
		if n := b.poisonDepth(); n != 2 {
			t.Errorf("poison holds %d, want the head once and the fact parked behind it", n)
		}
		if n := conn.Counts(b.consumer.Name).Get(runtime.DuplicateSkipped); n != 1 {
			t.Errorf("%d facts acked as in poison already, want the head delivered again", n)
		}
		if store != nil {
			if id, _, _, err := store.ParkedBehind(context.Background(), b.consumer.Name, "k"); err != nil || id != head.ID {
				t.Errorf("after the redelivery key k is parked behind %q (%v); want %s", id, err, head.ID)
			}
		}
		mu.Lock()
		if len(handled) != 0 {
			t.Errorf("handled %v while key k was parked", handled)
		}
		fixed = true
		mu.Unlock()

		if _, err := poison.Replay(context.Background(), b.conn, b.consumer, poison.Filter{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the replayed facts handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) >= 2 })
		mu.Lock()
		if got := strings.Join(handled, " "); got != "k0 k1" {
			t.Errorf("handled %q after the replay, want %q", got, "k0 k1")
		}
		mu.Unlock()
		if n := b.poisonDepth(); n != 0 {
			t.Errorf("poison holds %d after the replay, want 0", n)
		}
		if store != nil {
			if id, _, _, err := store.ParkedBehind(context.Background(), b.consumer.Name, "k"); err != nil || id != "" {
				t.Errorf("after the replay key k is parked behind %q (%v); want no park", id, err)
			}
		}
	}
	t.Run("memory", func(t *testing.T) {
		test(t, func() (runtime.Guard, runtime.ParkStore) { return nil, nil })
	})
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		test(t, func() (runtime.Guard, runtime.ParkStore) { g := newParkGuard(t, db, d); return g, g })
	})
}

// A discard of the poisoned fact a key is parked behind lifts the park: the
// discard sends the consumer a tombstone through the key's shard, which the
// consumer acks without calling the handler; the facts parked behind it,
// replayed, are then handled in order. A tombstone of a fact the key is not
// parked behind (a follower discarded) leaves the park as it was. With an
// SQL guard the park row goes; without one, the park in memory.
func TestADiscardLiftsAPark(t *testing.T) {
	test := func(t *testing.T, guard func() (runtime.Guard, runtime.ParkStore)) {
		b := newBroker(t, topology.ConsumerSpec{Name: "discardpark", Ordered: true, Shards: 1, MaxAttempts: 1, Park: true, Backoff: testLadder})
		t.Cleanup(func() { deleteQueue(t, b.url, poison.DiscardQueue(b.consumer)) })
		pub, err := runtime.NewPublisher(b.conn, b.events)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var calls []string // every handler call, the failing ones too
		opts := []runtime.ConsumerOption{}
		g, store := guard()
		if g != nil {
			opts = append(opts, runtime.WithGuard(g))
		}
		conn := b.dial()
		c, err := runtime.NewConsumer(conn, b.consumer, []runtime.Route{runtime.Handle(factParcel, func(ctx context.Context, _ runtime.Delivery, p parcel) error {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, fmt.Sprintf("%s%d", p.Order, p.N))
			if p.Order == "k" && p.N == 0 {
				return runtime.Permanent(errors.New("this parcel can never be sent"))
			}
			return nil
		})}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("consumer: %v", err)
			}
		}()
		publish := func(p parcel) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			id, err := pub.Publish(ctx, factParcel, p)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		parkedBehind := func() string {
			t.Helper()
			id, _, _, err := store.ParkedBehind(context.Background(), b.consumer.Name, "k")
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		discard := func(id string) {
			t.Helper()
			got, err := poison.Discard(context.Background(), b.conn, b.consumer, poison.Filter{ID: id}, "never to be sent")
			if err != nil || len(got) != 1 {
				t.Fatalf("discard %s: %d discarded, %v", id, len(got), err)
			}
		}
		skipped := func() uint64 { return conn.Counts(b.consumer.Name).Get(runtime.DuplicateSkipped) }

		head := publish(parcel{Order: "k", N: 0})
		testenv.Eventually(t, "the head poisoned", func() bool { return b.poisonDepth() >= 1 })
		first := publish(parcel{Order: "k", N: 1})
		publish(parcel{Order: "k", N: 2})
		testenv.Eventually(t, "the followers parked in poison", func() bool { return b.poisonDepth() >= 3 })

		// A follower discarded: its tombstone is acked, the key stays
		// parked behind the head.
		discard(first)
		testenv.Eventually(t, "the follower's tombstone acked", func() bool { return skipped() >= 1 })
		if store != nil {
			if id := parkedBehind(); id != head {
				t.Errorf("after a follower's discard key k is parked behind %q; want the head %s", id, head)
			}
		}

		discard(head)
		testenv.Eventually(t, "the head's tombstone acked", func() bool { return skipped() >= 2 })
		if store != nil {
			if id := parkedBehind(); id != "" {
				t.Errorf("after the head's discard key k is parked behind %q; want no park", id)
			}
		}
		if _, err := poison.Replay(context.Background(), b.conn, b.consumer, poison.Filter{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the replayed follower handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) >= 2 })
		publish(parcel{Order: "k", N: 3})
		testenv.Eventually(t, "a new fact of the key handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) >= 3 })
		mu.Lock()
		if got := strings.Join(calls, " "); got != "k0 k2 k3" {
			t.Errorf("handler called with %q, want %q: the head once, no tombstone, the rest in order", got, "k0 k2 k3")
		}
		mu.Unlock()
		if n := b.poisonDepth(); n != 0 {
			t.Errorf("poison holds %d, want 0", n)
		}
		if n := skipped(); n != 2 {
			t.Errorf("%d deliveries acked unhandled, want the two tombstones", n)
		}
		archived, err := poison.ListFrom(context.Background(), b.conn, b.consumer, poison.FromDiscarded, poison.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(archived) != 2 {
			t.Errorf("the archive holds %d, want the two discarded facts", len(archived))
		}
	}
	t.Run("memory", func(t *testing.T) {
		test(t, func() (runtime.Guard, runtime.ParkStore) { return nil, nil })
	})
	forEachDB(t, func(t *testing.T, db *sql.DB, d idempotency.Dialect) {
		test(t, func() (runtime.Guard, runtime.ParkStore) { g := newParkGuard(t, db, d); return g, g })
	})
}

// deleteQueue deletes a queue the test's topology does not know of.
func deleteQueue(t testing.TB, url, queue string) {
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
		t.Errorf("cleanup: delete queue %s: %v", queue, err)
	}
}
