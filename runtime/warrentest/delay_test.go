package warrentest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
	"github.com/warrenbus/warren/runtime/warrentest"
)

type orderPlaced struct {
	ID string `json:"id"`
}

var factOrderPlaced = runtime.Fact{RoutingKey: "order.placed", Version: 1}

// A fact published for two hours later waits in the delay levels in
// virtual time, then reaches exactly the consumers whose patterns match
// its key, with its due time.
func TestADelayedFactArrivesWhenDueInVirtualTime(t *testing.T) {
	top, err := topology.Build(topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}},
		{Name: "audit", Bindings: []string{"order.#"}},
		{Name: "stock", Bindings: []string{"stock.#"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[orderPlaced](b, factOrderPlaced)
		var mu sync.Mutex
		dueAt := map[string]time.Time{} // written by the handlers, read after Idle
		for _, name := range []string{"mailer", "audit", "stock"} {
			c, _ := top.Consumer(name)
			f := factOrderPlaced
			if name == "stock" {
				f = runtime.Fact{RoutingKey: "stock.moved", Version: 1}
			}
			cons, err := runtime.NewConsumer(b.Conn(), c, []runtime.Route{
				runtime.Handle(f, func(ctx context.Context, d runtime.Delivery, v orderPlaced) error {
					if d.RoutingKey != "order.placed" {
						t.Errorf("%s: routing key %q", name, d.RoutingKey)
					}
					mu.Lock()
					dueAt[name] = d.DueAt
					mu.Unlock()
					return nil
				}),
			})
			b.Start(name, cons, err)
		}
		pub, err := runtime.NewPublisher(b.Conn(), top.Exchanges[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		due := time.Now().Add(2 * time.Hour)
		id, err := pub.At(due).Publish(b.Context(), factOrderPlaced, orderPlaced{ID: "o-1"})
		if err != nil {
			t.Fatal(err)
		}
		if got := warrentest.Published[orderPlaced](b); len(got) != 1 || got[0].ID != "o-1" {
			t.Errorf("published = %+v", got)
		}

		b.Advance(time.Hour)
		if n := len(b.Calls("mailer")) + len(b.Calls("audit")); n != 0 {
			t.Fatalf("after an hour: %d calls, want none", n)
		}
		b.Idle()
		if late := time.Since(due); late < 0 || late > time.Second {
			t.Errorf("handled %s after its due time", late)
		}
		for _, name := range []string{"mailer", "audit"} {
			calls := b.Calls(name)
			if len(calls) != 1 || calls[0].MessageID != id || calls[0].RoutingKey != "order.placed" || calls[0].Err != nil {
				t.Errorf("%s: calls %+v", name, calls)
			}
			if !dueAt[name].Equal(due.Truncate(time.Millisecond)) {
				t.Errorf("%s: DueAt %s, want %s", name, dueAt[name], due)
			}
		}
		b.WantHandled("stock", 0)
	})
}

type step struct {
	OrderID string `json:"order_id"`
	N       int    `json:"n"`
}

var factStep = runtime.Fact{RoutingKey: "orders.order.step", Version: 1, OrderingKey: "/order_id"}

// An ordered consumer receives delayed facts through its hash exchange,
// in due order per key, whatever order they were scheduled in.
func TestAnOrderedConsumerReceivesDelayedFacts(t *testing.T) {
	top, err := topology.Build(topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "fulfilment", Bindings: []string{"orders.#"}, Ordered: true, Shards: 2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[step](b, factStep)
		var mu sync.Mutex
		var got []int
		c, err := runtime.NewConsumer(b.Conn(), top.Consumers[0], []runtime.Route{
			runtime.Handle(factStep, func(ctx context.Context, d runtime.Delivery, v step) error {
				mu.Lock()
				got = append(got, v.N)
				mu.Unlock()
				return nil
			}),
		})
		b.Start("fulfilment", c, err)
		pub, err := runtime.NewPublisher(b.Conn(), top.Exchanges[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		// Scheduled last-first; due first-last.
		for _, n := range []int{3, 2, 1} {
			if _, err := pub.In(time.Duration(n)*time.Minute).Publish(b.Context(), factStep, step{OrderID: "o-1", N: n}); err != nil {
				t.Fatal(err)
			}
		}
		b.Idle()
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
			t.Errorf("handled %v, want [1 2 3]", got)
		}
	})
}

// A retry that Advance reaches exactly is handled and settled by the time
// Advance returns: the runtime acks at once on the bus, where it gathers
// acks for a few milliseconds on a broker, which in virtual time would
// wait for the clock to move again. The test ends without Idle.
func TestAdvanceToARetrySettlesIt(t *testing.T) {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}, Backoff: []time.Duration{time.Second}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	warrentest.Run(t, top, func(t *testing.T, b *warrentest.Bus) {
		warrentest.Register[orderPlaced](b, factOrderPlaced)
		calls := 0
		startDeferring(t, b, top, "mailer", func(runtime.Delivery) error {
			calls++
			if calls == 1 {
				return errors.New("mail server busy")
			}
			return nil
		})
		warrentest.Publish(b, factOrderPlaced, orderPlaced{ID: "o-1"})
		b.Advance(time.Second)
		b.WantRetried("mailer", 1)
		b.WantHandled("mailer", 1)
		if n := b.Conn().Counts("mailer").Get(runtime.Acked); n != 1 {
			t.Errorf("acked %d after Advance reached the retry, want 1", n)
		}
	})
}
