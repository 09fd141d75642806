package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// countingMetrics is a Metrics that keeps what it is told.
type countingMetrics struct {
	mu       sync.Mutex
	counts   map[Event]int
	observed int
	failed   int
	paused   int
	resumed  int
}

func (m *countingMetrics) Paused(string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused++
}

func (m *countingMetrics) Resumed(string, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resumed++
}

func (m *countingMetrics) Count(consumer string, e Event, routingKey string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[e]++
}

func (m *countingMetrics) ObserveHandler(consumer, routingKey string, d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observed++
	if err != nil {
		m.failed++
	}
}

func TestFiguresAndMetrics(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "dash", Bindings: []string{"item.#"}, Backoff: testLadder, MaxAttempts: 2})
	m := &countingMetrics{counts: map[Event]int{}}
	conn := b.dial(Config{Metrics: m})
	spec := b.consumer(0)
	f := itemFact("item.added")
	pub, _ := NewPublisher(conn, b.events())
	ctx := context.Background()

	// Three facts wait in the work queue, nobody consumes yet.
	for i := range 3 {
		mustPublish(t, pub, f, item{SKU: "s", N: i})
	}
	testenv.Eventually(t, "three ready messages", func() bool { return b.depth(spec.Queue) == 3 })
	fig, err := conn.Figures(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if fig.WorkDepth != 3 || fig.PoisonDepth != 0 || fig.Consumers != 0 || fig.RedeliveryRate != 0 {
		t.Errorf("before consuming: %+v", fig)
	}

	// One delivery dies unacked (its channel closes): a redelivery.
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ch.Get(spec.Queue, false); !ok || err != nil {
		t.Fatalf("get: %v %v", ok, err)
	}
	_ = ch.Close()

	// A consumer takes them; N=0 always fails: retried once, then poison.
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if v.N == 0 {
			return errors.New("no")
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "one fact in poison and two acked", func() bool {
		n := conn.Counts(spec.Name)
		return n.Get(Poisoned) == 1 && n.Get(Acked) == 2
	})
	fig, err = conn.Figures(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	n := fig.Counts
	if fig.WorkDepth != 0 || fig.PoisonDepth != 1 || fig.Consumers != 1 {
		t.Errorf("after consuming: %+v", fig)
	}
	// Deliveries: the 3 facts (one of them redelivered) and 1 retry.
	if n.Get(Delivered) != 4 || n.Get(Redelivered) != 1 || n.Get(Retried) != 1 || n.Get(Returned) != 0 {
		t.Errorf("counts %v", n)
	}
	if fig.RedeliveryRate != 1.0/4 {
		t.Errorf("redelivery rate %v, want 0.25", fig.RedeliveryRate)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for e := Delivered; e < numEvents; e++ {
		if uint64(m.counts[e]) != n.Get(e) {
			t.Errorf("Metrics got %d %s, Counts say %d", m.counts[e], e, n.Get(e))
		}
	}
	if m.observed != 4 || m.failed != 2 {
		t.Errorf("ObserveHandler: %d calls, %d failed; want 4 and 2", m.observed, m.failed)
	}
}
