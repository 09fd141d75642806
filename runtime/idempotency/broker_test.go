package idempotency_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// A short ladder: these tests assert routing and counts, not delays.
var testLadder = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}

// shipment is the fact the broker tests publish.
type shipment struct {
	Order string `json:"order"`
}

var factShipped = runtime.Fact{RoutingKey: "order.shipped", Version: 1}

// broker is one test's private topology on the real broker, with a runtime
// connection that declares it and a plain connection that removes it when
// the test ends.
type broker struct {
	t        testing.TB
	conn     *runtime.Conn
	consumer topology.Consumer
	events   string
	url      string
	top      topology.Topology
}

// newBroker declares one consumer bound to order.* under test-unique names.
func newBroker(t testing.TB, spec topology.ConsumerSpec) *broker {
	t.Helper()
	url := testenv.AMQPURL(t)
	spec.Name = testenv.Name(spec.Name)
	spec.Bindings = []string{"order.*"}
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{spec},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTopology(t, raw, top) })
	c, _ := top.Consumer(spec.Name)
	b := &broker{t: t, consumer: c, events: top.Exchanges[0].Name, url: url, top: top}
	b.conn = b.dial()
	return b
}

// dial opens a runtime connection that declares the test's topology, and
// closes it when the test ends.
func (b *broker) dial() *runtime.Conn {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	top := b.top
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs: []string{b.url}, Topology: &top,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 500 * time.Millisecond,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func removeTopology(t testing.TB, raw *amqp.Connection, top topology.Topology) {
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, q := range top.Queues {
		if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
			t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
			return
		}
	}
	for _, e := range top.Exchanges {
		if err := ch.ExchangeDelete(e.Name, false, false); err != nil {
			t.Errorf("cleanup: delete exchange %s: %v", e.Name, err)
			return
		}
	}
}

// publish publishes env on the events exchange; publishing one envelope
// twice sends the same message id twice.
func (b *broker) publish(env runtime.Envelope) {
	b.t.Helper()
	p, err := runtime.NewPublisher(b.conn, b.events)
	if err != nil {
		b.t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.PublishEnvelope(ctx, factShipped, env); err != nil {
		b.t.Fatal(err)
	}
}

// run starts a consumer of the test's queue with handle behind the given
// options; the consumer stops when the test ends.
func (b *broker) run(handle func(ctx context.Context, d runtime.Delivery, s shipment) error, opts ...runtime.ConsumerOption) {
	b.t.Helper()
	c, err := runtime.NewConsumer(b.conn, b.consumer, []runtime.Route{runtime.Handle(factShipped, handle)}, opts...)
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	b.t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				b.t.Errorf("consumer: %v", err)
			}
		})
	})
}

// counts returns what the consumer counted so far.
func (b *broker) counts() runtime.Counts { return b.conn.Counts(b.consumer.Name) }

// waitFor waits, as testenv.Eventually does, until the consumer's counts
// satisfy cond. When it gives up it logs the last counts it saw.
func (b *broker) waitFor(what string, cond func(runtime.Counts) bool) runtime.Counts {
	b.t.Helper()
	var c runtime.Counts
	met := false
	defer func() {
		if !met {
			b.t.Logf("counts when giving up: %s", formatCounts(c))
		}
	}()
	testenv.Eventually(b.t, what, func() bool { c = b.counts(); return cond(c) })
	met = true
	return c
}

func formatCounts(c runtime.Counts) string {
	b, _ := json.Marshal(map[string]uint64{
		"delivered": c.Get(runtime.Delivered), "acked": c.Get(runtime.Acked), "retried": c.Get(runtime.Retried),
		"poisoned": c.Get(runtime.Poisoned), "duplicate_skipped": c.Get(runtime.DuplicateSkipped), "returned": c.Get(runtime.Returned),
		"held": c.Get(runtime.Held),
	})
	return string(b)
}

// poisonDepth returns how many messages wait in the consumer's poison queue.
func (b *broker) poisonDepth() int {
	b.t.Helper()
	f, err := b.conn.Figures(context.Background(), b.consumer)
	if err != nil {
		b.t.Fatal(err)
	}
	return f.PoisonDepth
}

func newEnvelope(t testing.TB, order string) runtime.Envelope {
	t.Helper()
	env, err := runtime.NewEnvelope(shipment{Order: order})
	if err != nil {
		t.Fatal(err)
	}
	return env
}
