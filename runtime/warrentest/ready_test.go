package warrentest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	warren "github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

type readyStep struct {
	OrderID string `json:"order_id"`
}

var factReadyStep = warren.Fact{RoutingKey: "orders.order.step", Version: 1, OrderingKey: "/order_id"}

func readyTopology(t *testing.T) topology.Topology {
	t.Helper()
	top, err := topology.Build(topology.Spec{
		Streams: []topology.StreamSpec{
			{Name: "steps-log", Bindings: []string{"orders.#"}},
			{Name: "steps-by-order", Bindings: []string{"orders.#"}, Partitions: 2},
		},
		Consumers: []topology.ConsumerSpec{
			{Name: "plain", Bindings: []string{"orders.#"}},
			{Name: "ordered", Bindings: []string{"orders.#"}, Ordered: true, Shards: 3},
			{Name: "reader", Bindings: []string{"orders.#"}, Stream: "steps-log"},
			{Name: "group", Bindings: []string{"orders.#"}, Stream: "steps-by-order"},
		},
		Responders: []topology.ResponderSpec{{Name: "pricing", Requests: []string{"pricing.quote"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// When Start returns, what the runner reads has its consumer on the
// broker: each queue of a consumer of any kind and of a responder, the
// stream of a stream consumer (read over the stream protocol or over
// AMQP, from its fixed start), every partition of a super stream for the
// group's first member. Nothing runs between Start and the look.
func TestStartReturnsOnceTheRunnerReadsEverything(t *testing.T) {
	top := readyTopology(t)
	route := warren.Handle(factReadyStep, func(context.Context, warren.Delivery, readyStep) error { return nil })
	consumer := func(b *Bus, name string, opts ...warren.ConsumerOption) (Runner, error) {
		spec, _ := b.top.Consumer(name)
		return warren.NewConsumer(b.Conn(), spec, []warren.Route{route}, opts...)
	}
	for _, tc := range []struct {
		label, name string
		runner      func(b *Bus) (Runner, error)
		queues      []string
	}{
		{"plain", "plain", func(b *Bus) (Runner, error) { return consumer(b, "plain") }, []string{"plain"}},
		{"ordered", "ordered", func(b *Bus) (Runner, error) { return consumer(b, "ordered") }, []string{"ordered.shard.0", "ordered.shard.1", "ordered.shard.2"}},
		{"stream", "reader", func(b *Bus) (Runner, error) { return consumer(b, "reader") }, []string{"steps-log", "reader"}},
		{"stream-over-AMQP", "reader", func(b *Bus) (Runner, error) { return consumer(b, "reader", warren.WithStreamReadOverAMQP()) }, []string{"steps-log", "reader"}},
		{"super-stream", "group", func(b *Bus) (Runner, error) { return consumer(b, "group") }, []string{"steps-by-order-0", "steps-by-order-1", "group"}},
		{"responder", "pricing", func(b *Bus) (Runner, error) {
			spec, _ := b.top.Responder("pricing")
			return warren.NewResponder(b.Conn(), spec, []warren.Answer{
				warren.Respond(warren.Request{Key: "pricing.quote"}, func(context.Context, warren.Delivery, readyStep) (readyStep, error) { return readyStep{}, nil }),
			})
		}, []string{"pricing.requests"}},
	} {
		look := func(t *testing.T, b *Bus) {
			r, err := tc.runner(b)
			b.Start(tc.name, r, err)
			for _, q := range tc.queues {
				st, ok := b.broker.Queue(q)
				if !ok {
					t.Fatalf("no queue %q on the bus", q)
				}
				if st.Consumers == 0 {
					t.Errorf("%s: queue %q has no consumer when Start returns", tc.name, q)
				}
			}
		}
		t.Run(tc.label+"/Run", func(t *testing.T) {
			Run(t, top, look)
		})
		t.Run(tc.label+"/New", func(t *testing.T) {
			look(t, New(t, top))
		})
	}
}

// A plain queue consumer is subscribed when Start returns: the first fact
// published after it goes straight to the consumer, which has room for
// one (prefetch 1), as on RabbitMQ; the facts after it wait in the queue,
// where a higher priority goes first. A consumer that subscribed only
// later would find all three waiting and take the high ones first. The
// facts are published on a channel of the broker's without waiting for a
// confirm, so that nothing else runs between Start and the third publish.
func TestAQueueConsumerHasTheFirstFactPublishedAfterStartInHand(t *testing.T) {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"orders.#"}, QueueType: topology.Classic, MaxPriority: 9,
			Concurrency: 1, Prefetch: 1, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	look := func(t *testing.T, b *Bus) {
		var mu sync.Mutex
		var handled []string
		c, err := warren.NewConsumer(b.Conn(), b.Topology().Consumers[0], []warren.Route{
			warren.Handle(factReadyStep, func(_ context.Context, _ warren.Delivery, s readyStep) error {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, s.OrderID)
				return nil
			}),
		})
		conn, derr := b.broker.Dial()
		if derr != nil {
			t.Fatal(derr)
		}
		defer conn.Close()
		ch, derr := conn.Channel()
		if derr != nil {
			t.Fatal(derr)
		}
		b.Start("mailer", c, err)
		for _, f := range []struct {
			id       string
			priority uint8
		}{{"low", 0}, {"high-1", 9}, {"high-2", 9}} {
			env, err := warren.NewEnvelope(json.RawMessage(`{"order_id":"` + f.id + `"}`))
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.PublishWithContext(b.ctx, b.eventsExchange(), factReadyStep.RoutingKey, false, false, amqp.Publishing{
				ContentType: "application/json", MessageId: env.ID, Priority: f.priority, Body: body,
			}); err != nil {
				t.Fatal(err)
			}
		}
		b.Idle()
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"low", "high-1", "high-2"}; !slices.Equal(handled, want) {
			t.Errorf("handled %v, want %v", handled, want)
		}
	}
	t.Run("Run", func(t *testing.T) { Run(t, top, look) })
	t.Run("New", func(t *testing.T) { look(t, New(t, top)) })
}

// A runner that stops before it reads what it is started for fails the
// test in Start, with what it returned, rather than leave the test to
// wonder why nothing reached it.
func TestStartReportsARunnerThatStopsBeforeItReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		b := newBus(r, indexer(t), true, nil)
		defer b.teardown()
		spec := b.Topology().Consumers[0]
		spec.Queue = "search-indexr" // a queue the bus does not have
		c, err := warren.NewConsumer(b.Conn(), spec, []warren.Route{
			warren.Handle(factItem, func(context.Context, warren.Delivery, item) error { return nil }),
		})
		got := fatalOf(r, func() { b.Start("search-indexer", c, err) })
		wantReport(t, got, "start search-indexer: it stopped before it read search-indexer", `"search-indexr" does not exist`)
		synctest.Wait()
		if len(r.errors) > 0 {
			t.Errorf("reported again after Start: %q", r.errors)
		}
	})
}

// A runner that does not read what the topology says it reads within the
// patience fails the test in Start, naming what it waits for.
func TestStartReportsARunnerThatNeverReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{TB: t}
		b := newBus(r, indexer(t), true, []Option{WithPatience(time.Hour)})
		defer b.teardown()
		got := fatalOf(r, func() { b.Start("search-indexer", idler{}, nil) })
		wantReport(t, got, "start search-indexer: after 1h0m0s of virtual time it still does not read search-indexer")
	})
}

// idler runs without reading anything.
type idler struct{}

func (idler) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
