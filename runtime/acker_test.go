package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A plain consumer acks several deliveries with one multiple ack, but
// never one whose handling has not finished: while the first delivery's
// handler is busy, the facts after it are handled and acked (their acks
// do not wait behind it, or the prefetch window would stall), and when
// the connection goes the busy one returns to the queue, alone.
func TestAcksTogetherNeverAckWorkInHand(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "acks", Bindings: []string{"item.#"}, Backoff: testLadder, Prefetch: 20, Concurrency: 4})
	conn := b.dial(Config{})
	spec := b.consumer(0)
	f := itemFact("item.added")
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := range n {
		mustPublish(t, pub, f, item{SKU: "s", N: i})
	}
	var busy atomic.Value // the busy handler's message id
	release := make(chan struct{})
	defer close(release)
	handled := make(chan string, n)
	c, err := NewConsumer(conn, spec, []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if busy.CompareAndSwap(nil, d.MessageID) {
			<-release
			return nil
		}
		if v.N%7 == 0 {
			time.Sleep(time.Millisecond) // complete out of order now and then
		}
		handled <- d.MessageID
		return nil
	})}, WithShutdownTimeout(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "every other fact acked", func() bool { return conn.Counts(spec.Name).Get(Acked) == n-1 })
	if got := len(handled); got != n-1 {
		t.Fatalf("%d facts handled, want %d", got, n-1)
	}
	if d := b.depth(spec.Queue); d != 0 {
		t.Fatalf("%d messages ready in the work queue while one is in hand, want 0", d)
	}
	// The connection goes while the busy handler still works: its message
	// must come back, and only it.
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the busy fact back in the queue", func() bool { return b.depth(spec.Queue) == 1 })
	back := b.get(spec.Queue)
	if want := busy.Load().(string); back.MessageId != want {
		t.Fatalf("message %s came back, want the busy one, %s", back.MessageId, want)
	}
	if got := conn.Counts(spec.Name).Get(Acked); got != n-1 {
		t.Fatalf("%d acked, want %d", got, n-1)
	}
}

// ackLog is a channel's Acknowledger that records the acks sent.
type ackLog struct{ acks []string }

func (l *ackLog) Ack(tag uint64, multiple bool) error {
	l.acks = append(l.acks, fmt.Sprintf("%d multiple=%v", tag, multiple))
	return nil
}
func (l *ackLog) Nack(uint64, bool, bool) error { return nil }
func (l *ackLog) Reject(uint64, bool) error     { return nil }

// The timer sends acks held back by a delivery in hand one by one only
// when the same delivery held them back when it fired before, however
// many wait: the first one in hand has most often just begun, and a
// multiple ack sends them all once it is done. A skipped stream fact's ack waits with the others
// and counts nothing.
func TestAckerTimerWaitsForTheHeadOnce(t *testing.T) {
	ch := &ackLog{}
	c := &core{metrics: nopMetrics{}, counters: &counters{}}
	a := newAcker(c, 100)
	// The test fires the timer itself.
	a.timer = time.AfterFunc(time.Hour, func() {})
	defer a.stop()
	d := func(tag uint64) amqp.Delivery { return amqp.Delivery{Acknowledger: ch, DeliveryTag: tag} }
	// Tag 1 in hand; 2 and 3 handled.
	a.ack(d(2), Acked, "k")
	a.ack(d(3), uncounted, "k")
	a.tick()
	if len(ch.acks) != 0 {
		t.Fatalf("first tick with tag 1 in hand sent %v, want nothing", ch.acks)
	}
	// Tag 1 done: one multiple ack at the next tick.
	a.ack(d(1), Acked, "k")
	a.tick()
	if want := []string{"3 multiple=true"}; !slices.Equal(ch.acks, want) {
		t.Fatalf("acks sent %v, want %v", ch.acks, want)
	}
	if got := c.counters[Acked].Load(); got != 2 {
		t.Fatalf("%d counted acked, want 2: the skipped fact's ack counts nothing", got)
	}
	// Tag 4 in hand through two ticks, more than half the prefetch
	// handled behind it: they go one by one at the second tick, not
	// before.
	ch.acks = nil
	var want []string
	for tag := uint64(5); tag < 5+60; tag++ {
		a.ack(d(tag), Acked, "k")
		want = append(want, fmt.Sprintf("%d multiple=false", tag))
	}
	if len(ch.acks) != 0 {
		t.Fatalf("acks behind tag 4 in hand sent %v before the timer fired, want nothing", ch.acks)
	}
	a.tick()
	if len(ch.acks) != 0 {
		t.Fatalf("first tick with tag 4 in hand sent %v, want nothing", ch.acks)
	}
	a.tick()
	if !slices.Equal(ch.acks, want) {
		t.Fatalf("acks sent %v, want %v: tag 4 held them back twice", ch.acks, want)
	}
}
