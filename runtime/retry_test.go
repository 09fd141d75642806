package runtime

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// attempts records the Delivery.Attempt of every handler call.
type attempts struct {
	mu  sync.Mutex
	got []int
}

func (a *attempts) add(n int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, n)
	return len(a.got)
}

func (a *attempts) list() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// A handler that fails transiently twice is retried through the ladder and
// succeeds on its third attempt.
func TestTransientFailureIsRetriedThenSucceeds(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "flaky", Bindings: []string{"item.#"}, Backoff: testLadder})
	conn := b.dial(Config{})
	f := itemFact("item.added")
	var calls attempts
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if calls.add(d.Attempt) <= 2 {
			return errors.New("search backend unavailable")
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})

	testenv.Eventually(t, "the third attempt acked", func() bool { return conn.Counts(b.consumer(0).Name).Get(Acked) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := calls.list(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("handler saw attempts %v, want [1 2 3]", got)
	}
	counts := conn.Counts(b.consumer(0).Name)
	if counts.Get(Retried) != 2 || counts.Get(Poisoned) != 0 {
		t.Errorf("retried %d, poisoned %d; want 2 and 0", counts.Get(Retried), counts.Get(Poisoned))
	}
	for _, q := range []string{b.consumer(0).Queue, b.consumer(0).PoisonQueue} {
		if n := b.depth(q); n != 0 {
			t.Errorf("queue %s holds %d messages, want 0", q, n)
		}
	}
}

// A message whose handler always fails walks the ladder in order and lands
// in poison with x-attempts = maxAttempts.
func TestAlwaysFailingEndsInPoisonAfterMaxAttempts(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "doomed", Bindings: []string{"item.#"}, Backoff: testLadder, MaxAttempts: 4})
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	spec := b.consumer(0)
	f := itemFact("item.added")
	var calls attempts
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		calls.add(d.Attempt)
		return errors.New("still down")
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	id := mustPublish(t, pub, f, item{SKU: "a"})

	d := b.get(spec.PoisonQueue)
	if got := calls.list(); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("handler saw attempts %v, want [1 2 3 4]", got)
	}
	if d.MessageId != id {
		t.Errorf("poison message id %q, want %q", d.MessageId, id)
	}
	if n := amqpmsg.HeaderInt(d.Headers, HeaderAttempts); n != 4 {
		t.Errorf("x-attempts = %d, want 4", n)
	}
	if s, _ := d.Headers[HeaderFailure].(string); s != "still down" {
		t.Errorf("x-failure = %q, want %q", s, "still down")
	}
	// The broker's own record of the delay queues the message expired in,
	// most recent first: the ladder, used in order, each tier once.
	// The delay queues the runtime chose, in order...
	want := []string{spec.Tiers[0].Queue, spec.Tiers[1].Queue, spec.Tiers[2].Queue}
	if got := rec.values("handler failed; retrying", "delay_queue"); !slices.Equal(got, want) {
		t.Errorf("retries went to %v, want %v", got, want)
	}
	// ...and the message came back from the last of them through the
	// broker's dead-lettering, on expiry. Only the newest x-death entry is
	// asserted: for a message a client republished, RabbitMQ 3.x carries the
	// older entries along while 4.x records the last death alone, and warren
	// counts attempts in x-attempts, not in x-death.
	deaths, _ := d.Headers["x-death"].([]any)
	if len(deaths) == 0 {
		t.Fatalf("no x-death on the poison copy: it never expired from a delay queue")
	}
	last, _ := deaths[0].(amqp.Table)
	if last["reason"] != "expired" || last["queue"] != spec.Tiers[2].Queue {
		t.Errorf("newest x-death %v, want reason expired from %s", last, spec.Tiers[2].Queue)
	}
	if n := conn.Counts(spec.Name).Get(Retried); n != 3 {
		t.Errorf("retried %d times, want 3", n)
	}
}

// Of two consumers bound to the same key, a retry of one never reaches the
// other.
func TestRetryReturnsToTheFailingConsumerOnly(t *testing.T) {
	b := newBroker(t,
		topology.ConsumerSpec{Name: "stumbles", Bindings: []string{"item.added"}, Backoff: testLadder},
		topology.ConsumerSpec{Name: "bystander", Bindings: []string{"item.added", "marker"}, Backoff: testLadder},
	)
	conn := b.dial(Config{})
	f, marker := itemFact("item.added"), itemFact("marker")
	var failed atomic.Bool
	var stumbles attempts
	a, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		stumbles.add(d.Attempt)
		if !failed.Swap(true) {
			return errors.New("transient")
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	var seen, markers atomic.Int32
	other, err := NewConsumer(conn, b.consumer(1), []Route{
		Handle(f, func(ctx context.Context, d Delivery, v item) error { seen.Add(1); return nil }),
		Handle(marker, func(ctx context.Context, d Delivery, v item) error { markers.Add(1); return nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, a)
	run(t, other)
	pub, _ := NewPublisher(conn, b.events())
	mustPublish(t, pub, f, item{SKU: "a"})
	testenv.Eventually(t, "the retry handled", func() bool { return len(stumbles.list()) == 2 })
	// A marker published after the retry was handled queues behind any copy
	// of the retry that reached the bystander.
	mustPublish(t, pub, marker, item{SKU: "m"})
	testenv.Eventually(t, "the marker handled", func() bool { return markers.Load() == 1 })
	if n := seen.Load(); n != 1 {
		t.Errorf("the bystander received the fact %d times, want exactly 1", n)
	}
}
