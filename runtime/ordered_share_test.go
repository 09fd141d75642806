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
	// Mostly waiting: beside the package's other long tests.
	t.Parallel()
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

// A shard with a parked key stays with the instance that parked it: a
// second instance started beside it takes a share of the other shards,
// while every later fact of the parked key still follows the poisoned one
// to poison, none of them handled by either instance.
func TestOrderedParkedShardIsNotHandedOver(t *testing.T) {
	// Mostly waiting: beside the package's other long tests.
	t.Parallel()
	spec := orderedSpec("sharedpark")
	spec.MaxAttempts, spec.Park = 1, true
	b := newBroker(t, spec)
	pubConn := b.dial(Config{})
	pub, err := NewPublisher(pubConn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	f := orderedFact()
	var mu sync.Mutex
	byInstance := [2]map[string]int{{}, {}}
	start := func(i int) {
		c, err := NewConsumer(b.dial(Config{}), b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, it item) error {
			if it.SKU == "parked" && it.N == 0 {
				return Permanent(errBadFact)
			}
			mu.Lock()
			defer mu.Unlock()
			byInstance[i][it.SKU]++
			return nil
		})}, withBalanceInterval(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		run(t, c)
	}
	start(0)
	mustPublish(t, pub, f, item{SKU: "parked", N: 0})
	poison := b.consumer(0).PoisonQueue
	testenv.Eventually(t, "the first fact poisoned", func() bool { return b.depth(poison) >= 1 })
	start(1)
	const keys, rounds = 40, 60
	for n := range rounds {
		mustPublish(t, pub, f, item{SKU: "parked", N: n + 1})
		for k := range keys {
			mustPublish(t, pub, f, item{SKU: fmt.Sprintf("key-%03d", k), N: n})
		}
		time.Sleep(20 * time.Millisecond)
	}
	handled := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range byInstance {
			for _, c := range m {
				n += c
			}
		}
		return n
	}
	testenv.Eventually(t, "the other keys handled", func() bool { return handled() >= keys*rounds })
	testenv.Eventually(t, "the parked key's facts in poison", func() bool { return b.depth(poison) >= 1+rounds })
	mu.Lock()
	defer mu.Unlock()
	t.Logf("instance 0 handled facts of %d keys, instance 1 of %d; poison holds %d", len(byInstance[0]), len(byInstance[1]), b.depth(poison))
	for i, m := range byInstance {
		if n := m["parked"]; n != 0 {
			t.Errorf("instance %d handled %d facts of the parked key; want all of them in poison behind the first", i, n)
		}
	}
	if len(byInstance[1]) == 0 {
		t.Errorf("the second instance handled nothing: no shard was handed over")
	}
	if n := b.depth(poison); n != 1+rounds {
		t.Errorf("poison holds %d, want the poisoned fact and its %d followers", n, rounds)
	}
}
