package runtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// newDelayBroker is newBroker with the delay levels, in a vhost of its own:
// a test's delay levels are 36 queues and 38 exchanges.
func newDelayBroker(t *testing.T, specs ...topology.ConsumerSpec) *broker {
	t.Helper()
	url := testenv.VHost(t, "delay")
	spec := topology.Spec{Delays: true, Exchanges: topology.Exchanges{
		Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead"),
	}}
	for _, s := range specs {
		s.Name = testenv.Name(s.Name)
		spec.Consumers = append(spec.Consumers, s)
	}
	return newBrokerFrom(t, url, spec)
}

// seen records the deliveries of one consumer.
type seen struct {
	mu   sync.Mutex
	list []Delivery
}

func (s *seen) add(d Delivery) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, d)
	return len(s.list)
}

func (s *seen) all() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.list...)
}

// A delayed fact reaches exactly the consumers whose patterns match its
// own routing key, as that key, with its due time; a retry of it works as
// for any fact; one that no consumer binds when due waits in the
// unroutable lane.
func TestDelayedFactReachesTheConsumersOfItsKey(t *testing.T) {
	b := newDelayBroker(t,
		topology.ConsumerSpec{Name: "mailer", Bindings: []string{"item.added"}, Backoff: testLadder},
		topology.ConsumerSpec{Name: "audit", Bindings: []string{"item.#"}, Backoff: testLadder},
		topology.ConsumerSpec{Name: "stock", Bindings: []string{"stock.#"}, Backoff: testLadder},
	)
	conn := b.dial(Config{})
	f := itemFact("item.added")
	var got [3]seen
	for i := range 3 {
		fail := i == 0 // the mailer fails its first attempt
		routes := []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			if got[i].add(d) == 1 && fail {
				return errors.New("smtp down")
			}
			return nil
		})}
		if i == 2 {
			routes = []Route{Handle(itemFact("stock.moved"), func(ctx context.Context, d Delivery, v item) error {
				got[i].add(d)
				return nil
			})}
		}
		c, err := NewConsumer(conn, b.consumer(i), routes)
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, c)
		t.Cleanup(func() { _ = stop() })
	}
	pub, _ := NewPublisher(conn, b.events())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now()
	id, err := pub.In(37*time.Millisecond).Publish(ctx, f, item{SKU: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// Nobody binds this one.
	if _, err := pub.In(20*time.Millisecond).Publish(ctx, itemFact("nobody.binds"), item{SKU: "b"}); err != nil {
		t.Fatal(err)
	}

	mailer, audit := b.consumer(0).Name, b.consumer(1).Name
	testenv.Eventually(t, "the mailer acked after a retry and the audit acked", func() bool {
		return conn.Counts(mailer).Get(Acked) == 1 && conn.Counts(audit).Get(Acked) == 1
	})
	unroutable := topology.UnroutableQueue(b.events())
	testenv.Eventually(t, "the unbound fact in "+unroutable, func() bool { return b.depth(unroutable) == 1 })
	for i, want := range []int{2, 1, 0} {
		ds := got[i].all()
		if len(ds) != want {
			t.Fatalf("consumer %d: %d deliveries, want %d", i, len(ds), want)
		}
		for _, d := range ds {
			if d.MessageID != id || d.RoutingKey != "item.added" {
				t.Errorf("consumer %d: delivery %s %q, want %s item.added", i, d.MessageID, d.RoutingKey, id)
			}
			if d.DueAt.Before(before.Add(36*time.Millisecond)) || d.DueAt.After(time.Now()) {
				t.Errorf("consumer %d: DueAt %s, published at %s with 37ms", i, d.DueAt, before)
			}
		}
	}
	if ds := got[0].all(); ds[1].Attempt != 2 {
		t.Errorf("the mailer's retry: attempt %d", ds[1].Attempt)
	}
	if n := conn.Counts(mailer).Get(Retried); n != 1 {
		t.Errorf("mailer retried %d times, want 1", n)
	}
	for k := range topology.DelayLevels {
		if n := b.depth(topology.DelayExchange(b.events(), k)); n != 0 {
			t.Errorf("delay level %d holds %d", k, n)
		}
	}
	m := b.get(unroutable)
	if m.Headers[HeaderOriginalRoutingKey] != "nobody.binds" || m.Headers[HeaderDueAt] == nil {
		t.Errorf("unroutable copy: headers %v", m.Headers)
	}
}

func TestDelayedPublishRefusesWhatItCannotHold(t *testing.T) {
	b := newDelayBroker(t, topology.ConsumerSpec{Name: "c", Bindings: []string{"item.#"}})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := itemFact("item.added")
	for _, v := range []*Publisher{pub.In(-time.Second), pub.In(topology.MaxDelay + time.Millisecond), pub.At(time.Now().Add(topology.MaxDelay + time.Hour))} {
		if _, err := v.Publish(ctx, f, item{SKU: "a"}); !errors.Is(err, ErrDelay) || !strings.Contains(err.Error(), "(about 795 days)") {
			t.Errorf("err = %v, want ErrDelay saying the reach in days", err)
		}
	}
	// Validated when scheduled, not when due.
	if _, err := pub.In(time.Hour).Publish(ctx, f, item{}); err == nil || !strings.Contains(err.Error(), "/sku") {
		t.Errorf("invalid payload: err = %v", err)
	}
	// Zero, and a time that passed, publish now (a time in the past keeps
	// its due time).
	mustPublish(t, pub.In(0), f, item{SKU: "now"})
	past := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	mustPublish(t, pub.At(past), f, item{SKU: "past"})
	if n := b.depth(b.consumer(0).Queue); n != 2 {
		t.Fatalf("work queue holds %d, want the 2 facts published now", n)
	}
	m := b.get(b.consumer(0).Queue)
	if m.RoutingKey != "item.added" || m.Headers[HeaderDueAt] == nil {
		t.Errorf("In(0): routing key %q, headers %v", m.RoutingKey, m.Headers)
	}
	m = b.get(b.consumer(0).Queue)
	if m.Headers[HeaderDueAt] != past.UTC().Format(dueAtLayout) {
		t.Errorf("At(past): x-due-at %v, want %s", m.Headers[HeaderDueAt], past.UTC().Format(dueAtLayout))
	}
	// A long delay waits in its top level.
	if _, err := pub.In(48*time.Hour).Publish(ctx, f, item{SKU: "later"}); err != nil {
		t.Fatal(err)
	}
	held := 0
	for k := range topology.DelayLevels {
		held += b.depth(topology.DelayExchange(b.events(), k))
	}
	if held != 1 {
		t.Errorf("delay levels hold %d, want 1", held)
	}
}

func TestDelayedPublishWithoutDelayLevels(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "c", Bindings: []string{"item.#"}})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := pub.In(time.Second).Publish(ctx, itemFact("item.added"), item{SKU: "a"})
	if err == nil || !strings.Contains(err.Error(), "delay levels") || ctx.Err() != nil {
		t.Fatalf("err = %v", err)
	}
	// The publisher goes on publishing now.
	mustPublish(t, pub, itemFact("item.added"), item{SKU: "b"})
}

// An ordered consumer's hash exchange is bound to the delivery exchange:
// delayed facts reach its shards, each key's in one shard.
func TestDelayedFactsReachAnOrderedConsumer(t *testing.T) {
	b := newDelayBroker(t, orderedSpec("ordered"))
	conn := b.dial(Config{})
	var got seen
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error {
		got.add(d)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	t.Cleanup(func() { _ = stop() })
	pub, _ := NewPublisher(conn, b.events())
	for n := range 10 {
		if _, err := pub.In(time.Duration(10+n)*time.Millisecond).Publish(context.Background(), orderedFact(), item{SKU: "key-" + string(rune('a'+n%3)), N: n}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "10 delayed facts handled", func() bool { return conn.Counts(b.consumer(0).Name).Get(Acked) == 10 })
	for _, d := range got.all() {
		if d.RoutingKey != "item.added" || d.DueAt.IsZero() {
			t.Errorf("delivery %+v", d)
		}
	}
}
