package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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
