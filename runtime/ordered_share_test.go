package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
)

// An instance of an ordered consumer started while another already reads
// every shard takes its share: the first hands shards over until each
// holds about half, both handle facts from then on, and every key's facts
// are handled in publish order, one at a time, across the hand-overs.
func TestOrderedConsumerSharesShardsWithALaterInstance(t *testing.T) {
	b := newBroker(t, orderedSpec("shared"))
	pubConn := b.dial(Config{})
	pub, err := NewPublisher(pubConn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	const keys, rounds, joinAt, measureFrom = 40, 120, 20, 80
	h := newHandled()
	var mu sync.Mutex
	late := [2]int{} // facts of rounds measureFrom on, by instance
	var perInstance [2]atomic.Int32
	var conns [2]*Conn
	start := func(i int) func() error {
		conn := b.dial(Config{})
		conns[i] = conn
		c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error {
			return h.run(it, func() error {
				perInstance[i].Add(1)
				if it.N >= measureFrom {
					mu.Lock()
					late[i]++
					mu.Unlock()
				}
				return nil
			})
		})}, withBalanceInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return run(t, c)
	}
	stops := []func() error{start(0)}
	f := orderedFact()
	for n := range rounds {
		if n == joinAt {
			testenv.Eventually(t, "the first instance at work", func() bool { return h.count() > 0 })
			stops = append(stops, start(1))
		}
		for k := range keys {
			if _, err := pub.Publish(context.Background(), f, item{SKU: fmt.Sprintf("key-%03d", k), N: n}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	testenv.Eventually(t, "all facts handled", func() bool { return h.count() >= keys*rounds })
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	h.checkInOrder(t, keys, rounds)
	mu.Lock()
	defer mu.Unlock()
	total := late[0] + late[1]
	t.Logf("instance 0 handled %d facts, instance 1 (started at round %d) %d; of rounds %d on: %d and %d",
		perInstance[0].Load(), joinAt, perInstance[1].Load(), measureFrom, late[0], late[1])
	for i, n := range late {
		if n*100 < total*15 {
			t.Errorf("instance %d handled %d of the %d facts of rounds %d on; want a share (at least 15%%)", i, n, total, measureFrom)
		}
	}
	for i, conn := range conns {
		counts := conn.Counts(b.consumer(0).Name)
		for _, e := range []Event{SequenceGap, SequenceStepBack} {
			if n := counts.Get(e); n != 0 {
				t.Errorf("instance %d: %s counted %d, want 0", i, e, n)
			}
		}
	}
}
