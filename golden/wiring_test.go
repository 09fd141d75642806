package golden_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	wiring "github.com/warrenbus/warren/golden/wiring/want"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
)

// handled is one call of a generated handler method.
type handled struct {
	d    runtime.Delivery
	fact any
}

// recorder implements both generated handler interfaces of the wiring
// case: it records every call and fails on request, by order id.
type recorder struct {
	mu    sync.Mutex
	calls []handled
	// failures maps an order id to the errors HandleItemReserved returns on
	// successive attempts; nil once they are used up.
	failures map[string][]error
}

func (r *recorder) record(d runtime.Delivery, fact any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, handled{d, fact})
}

func (r *recorder) HandleItemCounted(_ context.Context, d runtime.Delivery, fact wiring.ItemCounted) error {
	r.record(d, fact)
	return nil
}

func (r *recorder) HandleItemReserved(_ context.Context, d runtime.Delivery, fact wiring.ItemReserved) error {
	r.record(d, fact)
	r.mu.Lock()
	defer r.mu.Unlock()
	if errs := r.failures[fact.OrderID]; len(errs) > 0 {
		r.failures[fact.OrderID] = errs[1:]
		return errs[0]
	}
	return nil
}

// of returns the calls for one message id.
func (r *recorder) of(id string) []handled {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []handled
	for _, c := range r.calls {
		if c.d.MessageID == id {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// TestWiring drives the generated code of golden/wiring on the real broker:
// Topology declared through runtime.Config, the typed Publisher, and both
// consumers built by their generated constructors.
func TestWiring(t *testing.T) {
	url := testenv.VHost(t, "warren-golden")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{
		URLs:     []string{url},
		Topology: &wiring.Topology,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	pub, err := wiring.NewPublisher(conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })

	keeper := &recorder{failures: map[string][]error{
		"ORD-PERM":  {runtime.Permanent(errors.New("order ORD-PERM was cancelled"))},
		"ORD-RETRY": {errors.New("stock database busy")},
	}}
	auditor := &recorder{}
	kc, err := wiring.NewStockKeeperConsumer(conn, keeper)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := wiring.NewStockAuditorConsumer(conn, auditor)
	if err != nil {
		t.Fatal(err)
	}
	runConsumer(t, kc)
	runConsumer(t, ac)
	keeperTop, _ := wiring.Topology.Consumer("stock-keeper")
	auditorTop, _ := wiring.Topology.Consumer("stock-auditor")

	t.Run("typed publish reaches the typed handlers", func(t *testing.T) {
		ana := "ana"
		sent := wiring.ItemCounted{Sku: "BOX-0042", Quantity: 12, CountedBy: &ana}
		before := time.Now()
		id, err := pub.PublishItemCounted(ctx, sent)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "both consumers to handle the count", func() bool {
			return len(keeper.of(id)) == 1 && len(auditor.of(id)) == 1
		})
		for consumer, r := range map[string]*recorder{keeperTop.Name: keeper, auditorTop.Name: auditor} {
			got := r.of(id)[0]
			if diff := cmp.Diff(sent, got.fact); diff != "" {
				t.Errorf("%s: decoded fact (-sent +handled):\n%s", consumer, diff)
			}
			d := got.d
			if d.MessageID != id || d.RoutingKey != wiring.ItemCountedRoutingKey || d.Attempt != 1 || d.Redelivered || d.Consumer != consumer {
				t.Errorf("%s: delivery %+v; want message id %s, routing key %s, attempt 1, not redelivered", consumer, d, id, wiring.ItemCountedRoutingKey)
			}
			if d.OccurredAt.Before(before.Add(-time.Minute)) || d.OccurredAt.After(time.Now().Add(time.Minute)) {
				t.Errorf("%s: occurred at %v, not around the publish at %v", consumer, d.OccurredAt, before)
			}
		}
	})

	t.Run("invalid payload is rejected before sending", func(t *testing.T) {
		n := auditor.count()
		_, err := pub.PublishItemCounted(ctx, wiring.ItemCounted{Sku: "BOX-0042", Quantity: -1})
		if err == nil || !strings.Contains(err.Error(), "does not match its schema") || !strings.Contains(err.Error(), "quantity") {
			t.Fatalf("publish of a negative quantity: err = %v; want a schema error naming quantity", err)
		}
		// Queues are FIFO and the auditor handles one message at a time:
		// once the next count is handled, an invalid one sent before it
		// would have been handled or poisoned too.
		id, err := pub.PublishItemCounted(ctx, wiring.ItemCounted{Sku: "BOX-0043", Quantity: 0})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the auditor to handle the valid count", func() bool { return len(auditor.of(id)) == 1 })
		if got := auditor.count(); got != n+1 {
			t.Errorf("the auditor handled %d facts since the invalid publish, want 1", got-n)
		}
		for _, c := range []struct {
			name  string
			depth int
		}{{auditorTop.PoisonQueue, poisonDepth(ctx, t, conn, auditorTop.Name)}, {keeperTop.PoisonQueue, poisonDepth(ctx, t, conn, keeperTop.Name)}} {
			if c.depth != 0 {
				t.Errorf("%s holds %d messages; the invalid fact reached the broker", c.name, c.depth)
			}
		}
	})

	t.Run("a transient error is retried", func(t *testing.T) {
		id, err := pub.PublishItemReserved(ctx, wiring.ItemReserved{Sku: "BOX-0042", OrderID: "ORD-RETRY", Quantity: 2})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the second attempt", func() bool { return len(keeper.of(id)) == 2 })
		var attempts []int
		for _, c := range keeper.of(id) {
			attempts = append(attempts, c.d.Attempt)
		}
		if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
	})

	t.Run("a permanent error poisons the message", func(t *testing.T) {
		id, err := pub.PublishItemReserved(ctx, wiring.ItemReserved{Sku: "BOX-0042", OrderID: "ORD-PERM", Quantity: 1})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "a copy in "+keeperTop.PoisonQueue, func() bool { return poisonDepth(ctx, t, conn, keeperTop.Name) == 1 })
		msg := getOne(t, url, keeperTop.PoisonQueue)
		if msg.MessageId != id {
			t.Errorf("poison message id %q, want %q", msg.MessageId, id)
		}
		want := map[string]any{
			runtime.HeaderConsumer:           keeperTop.Name,
			runtime.HeaderOriginalRoutingKey: wiring.ItemReservedRoutingKey,
			runtime.HeaderOriginalExchange:   wiring.Topology.Exchanges[0].Name,
		}
		for k, v := range want {
			if msg.Headers[k] != v {
				t.Errorf("header %s = %v, want %v", k, msg.Headers[k], v)
			}
		}
		if f, _ := msg.Headers[runtime.HeaderFailure].(string); !strings.Contains(f, "ORD-PERM was cancelled") {
			t.Errorf("header %s = %q; want the handler's error", runtime.HeaderFailure, f)
		}
		if n := len(keeper.of(id)); n != 1 {
			t.Errorf("handler called %d times; a permanent error is not retried", n)
		}
	})
}

func TestConsumerConstructorRejectsNilHandler(t *testing.T) {
	_, err := wiring.NewStockKeeperConsumer(nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"stock-keeper": nil StockKeeperHandler`) {
		t.Errorf("err = %v; want one naming the consumer and the nil handler", err)
	}
}

// runConsumer runs c until the test ends, then stops it and expects a clean
// shutdown.
func runConsumer(t *testing.T, c *runtime.Consumer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consumer Run: %v", err)
		}
	})
}

func poisonDepth(ctx context.Context, t *testing.T, conn *runtime.Conn, consumer string) int {
	t.Helper()
	c, _ := wiring.Topology.Consumer(consumer)
	f, err := conn.Figures(ctx, c)
	if err != nil {
		t.Fatalf("figures of %s: %v", consumer, err)
	}
	return f.PoisonDepth
}

// getOne takes one message from queue with a plain AMQP connection.
func getOne(t *testing.T, url, queue string) amqp.Delivery {
	t.Helper()
	raw, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	msg, ok, err := ch.Get(queue, true)
	if err != nil || !ok {
		t.Fatalf("get from %s: ok %v, err %v", queue, ok, err)
	}
	return msg
}
