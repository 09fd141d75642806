package streamoffset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

type item struct {
	SKU string `json:"sku"`
}

func itemFact(key string) runtime.Fact {
	return runtime.Fact{RoutingKey: key, Version: 3, OrderingKey: "/sku", Validate: func(b []byte) error {
		var v item
		if err := json.Unmarshal(b, &v); err != nil || v.SKU == "" {
			return fmt.Errorf("/sku: expected a non-empty string (%v)", err)
		}
		return nil
	}}
}

// seen is what a handler saw of each fact.
type seen struct {
	mu  sync.Mutex
	ids []string
	by  map[string]runtime.Delivery
}

func (s *seen) add(d runtime.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, d.MessageID)
	s.by[d.MessageID] = d
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// A stream declared with publish "direct" takes the facts only it binds
// from the Publisher over the stream protocol: with the stream's binding
// to the events exchange removed, they still arrive, in publish order,
// with the id, time, routing key and headers a publish through the
// exchange gives them. A fact that a consumer's queue binds as well goes
// through the exchange.
func TestDirectStreamPublish(t *testing.T) {
	raw := testenv.AMQPURL(t)
	port := testenv.StreamPort(t)
	stream := testenv.Name("direct-log")
	events := testenv.Name("events")
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: events, Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: stream, Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
		Consumers: []topology.ConsumerSpec{
			{Name: testenv.Name("reader"), Bindings: []string{"item.#"}, Stream: stream, Start: topology.Start{Kind: topology.StartFirst}, Backoff: []time.Duration{20 * time.Millisecond}},
			{Name: testenv.Name("shipping"), Bindings: []string{"item.shipped"}, Backoff: []time.Duration{20 * time.Millisecond}},
		},
	}
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := top.DirectStream(events, "item.added"); !ok || s != stream {
		t.Fatalf("DirectStream(item.added) = %q, %v; want %q", s, ok, stream)
	}
	if s, ok := top.DirectStream(events, "item.shipped"); ok {
		t.Fatalf("DirectStream(item.shipped) = %q: a queue binds it too, so it goes through the exchange", s)
	}
	deleteAtEnd(t, raw, top)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port, Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// Only a direct write can reach the stream now.
	rc, err := amqp.Dial(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ch, err := rc.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueUnbind(stream, "item.#", events, nil); err != nil {
		t.Fatal(err)
	}

	pub, err := runtime.NewPublisher(conn, events)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	added := itemFact("item.added")
	var pending []*runtime.Pending
	var want []string
	for i := range n {
		h, err := pub.PublishAsync(ctx, added, item{SKU: fmt.Sprintf("sku-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, h)
		want = append(want, h.ID())
	}
	for _, h := range pending {
		if err := h.Wait(ctx); err != nil {
			t.Fatalf("confirm of a direct write: %v", err)
		}
	}
	shippedID, err := pub.Publish(ctx, itemFact("item.shipped"), item{SKU: "sku-0"})
	if err != nil {
		t.Fatalf("a fact a queue binds too, through the exchange: %v", err)
	}

	reader := &seen{by: map[string]runtime.Delivery{}}
	shipping := &seen{by: map[string]runtime.Delivery{}}
	var stops []func()
	start := func(c topology.Consumer, s *seen, f runtime.Fact) {
		cons, err := runtime.NewConsumer(conn, c, []runtime.Route{runtime.Handle(f, func(_ context.Context, d runtime.Delivery, _ item) error {
			s.add(d)
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		cctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- cons.Run(cctx) }()
		stops = append(stops, func() {
			stop()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("consumer %s: %v", c.Name, err)
			}
		})
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	start(top.Consumers[0], reader, added)
	start(top.Consumers[1], shipping, itemFact("item.shipped"))
	testenv.Eventually(t, "the direct writes read from the stream", func() bool { return len(reader.list()) >= n })
	testenv.Eventually(t, "the fact a queue binds too, in its queue", func() bool { return len(shipping.list()) == 1 })
	if got := reader.list(); !slices.Equal(got, want) {
		t.Fatalf("the stream holds %d facts, want the %d written, in publish order", len(got), len(want))
	}
	if got := shipping.list(); got[0] != shippedID {
		t.Fatalf("the queue received %v, want %s", got, shippedID)
	}
	d := reader.by[want[7]]
	if d.RoutingKey != "item.added" || d.OccurredAt.IsZero() || time.Since(d.OccurredAt) > time.Minute {
		t.Fatalf("a direct write delivered with routing key %q and time %v", d.RoutingKey, d.OccurredAt)
	}
	if v := fmt.Sprint(d.Headers[runtime.HeaderFactVersion]); v != "3" {
		t.Fatalf("header %s %q, want 3 (headers %v)", runtime.HeaderFactVersion, v, d.Headers)
	}
	if k := d.Headers[runtime.HeaderOrderingKey]; k != "sku-7" {
		t.Fatalf("header %s %v, want sku-7", runtime.HeaderOrderingKey, k)
	}

	// A reader of another client sees a direct write as it sees the same
	// fact published through the exchange into the stream: properties,
	// exchange, routing key and headers, each header of the same type.
	spec.Streams = []topology.StreamSpec{spec.Streams[0]}
	spec.Streams[0].Direct = false
	viaExchange, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	conn2, err := runtime.Dial(ctx, runtime.Config{URLs: []string{raw}, StreamPort: port, Topology: &viaExchange})
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	pubX, err := runtime.NewPublisher(conn2, events)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(stream, "item.#", events, false, nil); err != nil {
		t.Fatal(err)
	}
	xID, err := pubX.Publish(ctx, added, item{SKU: "sku-7"})
	if err != nil {
		t.Fatalf("the same fact through the exchange: %v", err)
	}
	direct, exchanged := rawStreamRead(t, ch, stream, want[7], xID)
	for name, v := range map[string][2]any{
		"content type":  {direct.ContentType, exchanged.ContentType},
		"delivery mode": {direct.DeliveryMode, exchanged.DeliveryMode},
		"type":          {direct.Type, exchanged.Type},
		"exchange":      {direct.Exchange, exchanged.Exchange},
		"routing key":   {direct.RoutingKey, exchanged.RoutingKey},
		"header types":  {headerTypes(direct.Headers), headerTypes(exchanged.Headers)},
		"ordering key":  {direct.Headers[runtime.HeaderOrderingKey], exchanged.Headers[runtime.HeaderOrderingKey]},
		"fact version":  {direct.Headers[runtime.HeaderFactVersion], exchanged.Headers[runtime.HeaderFactVersion]},
	} {
		if fmt.Sprint(v[0]) != fmt.Sprint(v[1]) {
			t.Errorf("%s of a direct write %v, through the exchange %v", name, v[0], v[1])
		}
	}
	if direct.Timestamp.IsZero() || time.Since(direct.Timestamp) > time.Minute {
		t.Errorf("a direct write's timestamp %v", direct.Timestamp)
	}

	// A stream that is gone refuses the writer: the publish fails, rather
	// than wait for a stream that will not come.
	if _, err := ch.QueueDelete(stream, false, false, false); err != nil {
		t.Fatal(err)
	}
	pub2, err := runtime.NewPublisher(conn, events)
	if err != nil {
		t.Fatal(err)
	}
	defer pub2.Close()
	if _, err := pub2.Publish(ctx, added, item{SKU: "gone"}); !errors.Is(err, runtime.ErrStreamRefused) {
		t.Fatalf("a direct publish into a deleted stream: err = %v, want one matching runtime.ErrStreamRefused", err)
	}
}

// rawStreamRead reads stream from its start with amqp091-go alone and
// returns the deliveries whose message ids are a and b.
func rawStreamRead(t *testing.T, ch *amqp.Channel, stream, a, b string) (amqp.Delivery, amqp.Delivery) {
	t.Helper()
	if err := ch.Qos(500, 0, false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(stream, "", false, false, false, false, amqp.Table{"x-stream-offset": "first"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]amqp.Delivery{}
	timeout := time.After(30 * time.Second)
	for got[a].MessageId == "" || got[b].MessageId == "" {
		select {
		case d := <-ds:
			got[d.MessageId] = d
			if err := d.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatalf("facts %s and %s not both read from the stream with amqp091-go", a, b)
		}
	}
	return got[a], got[b]
}

// headerTypes names each header and its value's Go type, sorted.
func headerTypes(h amqp.Table) []string {
	var out []string
	for k, v := range h {
		out = append(out, fmt.Sprintf("%s:%T", k, v))
	}
	slices.Sort(out)
	return out
}
