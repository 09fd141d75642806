package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// orderedFact is itemFact with sku as its ordering key.
func orderedFact() Fact {
	f := itemFact("item.added")
	f.OrderingKey = "/sku"
	return f
}

func orderedSpec(name string) topology.ConsumerSpec {
	return topology.ConsumerSpec{Name: name, Bindings: []string{"item.added"}, Ordered: true, Shards: 4,
		Concurrency: 8, MaxAttempts: 3, Backoff: testLadder}
}

// handled records what an ordered consumer's handlers saw: per key the
// numbers of the facts handled successfully, in handling order, and any
// moment at which two handlers held facts of one key at once.
type handled struct {
	mu       sync.Mutex
	byKey    map[string][]int
	total    int
	inFlight sync.Map // key -> *atomic.Int32
	overlaps atomic.Int32
}

func newHandled() *handled { return &handled{byKey: map[string][]int{}} }

// run wraps a handler body: it marks the key busy, fails the overlap check
// if it already was, and records the fact if body succeeds.
func (h *handled) run(it item, body func() error) error {
	v, _ := h.inFlight.LoadOrStore(it.SKU, new(atomic.Int32))
	busy := v.(*atomic.Int32)
	if busy.Add(1) > 1 {
		h.overlaps.Add(1)
	}
	defer busy.Add(-1)
	if err := body(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byKey[it.SKU] = append(h.byKey[it.SKU], it.N)
	h.total++
	return nil
}

func (h *handled) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.total }

// distinct counts the facts handled, each once however often it was.
func (h *handled) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, got := range h.byKey {
		seen := map[int]bool{}
		for _, x := range got {
			seen[x] = true
		}
		n += len(seen)
	}
	return n
}

// compactRepeats drops from each key's facts a fact handled again right
// after itself (a redelivery after a lost connection), for tests whose
// broker may drop connections of its own accord.
func (h *handled) compactRepeats() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, got := range h.byKey {
		h.byKey[key] = slices.Compact(got)
	}
}

// checkInOrder fails t unless every key saw exactly 0..perKey-1 in order
// and no key was ever handled twice at once.
func (h *handled) checkInOrder(t *testing.T, keys, perKey int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.byKey) != keys {
		t.Errorf("facts of %d keys handled, want %d", len(h.byKey), keys)
	}
	for key, got := range h.byKey {
		want := make([]int, perKey)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Errorf("key %s: handled %d facts in the order %v, want 0..%d in order", key, len(got), got, perKey-1)
		}
	}
	if n := h.overlaps.Load(); n > 0 {
		t.Errorf("%d times a key was handled by two handlers at once", n)
	}
}

// publishOwned publishes perKey facts for each of keys from writers
// goroutines, each owning keys/writers of them, in order per key.
func publishOwned(t *testing.T, pub *Publisher, keys, perKey, writers int) {
	t.Helper()
	f := orderedFact()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for n := range perKey {
				for k := w; k < keys; k += writers {
					if _, err := pub.Publish(context.Background(), f, item{SKU: fmt.Sprintf("key-%03d", k), N: n}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// 10,000 facts over 100 keys from 4 goroutines, through an ordered consumer
// with concurrency 8: every key's facts are handled in publish order, one
// at a time, and a fact that fails twice is retried in place without
// letting its key's later facts overtake it.
func TestOrderedConsumerKeepsPublishOrderPerKey(t *testing.T) {
	// Mostly waiting: beside the package's other long tests.
	t.Parallel()
	b := newBroker(t, orderedSpec("ordered"))
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	const keys, perKey, writers = 100, 100, 4
	publishOwned(t, pub, keys, perKey, writers)

	h := newHandled()
	var flaky atomic.Int32 // attempts at key-007's fact 50, which fails twice
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error {
		return h.run(it, func() error {
			if it.SKU == "key-007" && it.N == 50 && flaky.Add(1) <= 2 {
				return errors.New("flaky dependency")
			}
			return nil
		})
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	testenv.Eventually(t, "all facts handled", func() bool { return h.count() >= keys*perKey })
	fig, err := conn.Figures(context.Background(), b.consumer(0))
	if err != nil {
		t.Fatal(err)
	}
	if fig.Consumers != 4 || fig.WorkDepth != 0 {
		t.Errorf("figures: %d consumers and depth %d over the shards, want 4 (one per shard) and 0", fig.Consumers, fig.WorkDepth)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h.checkInOrder(t, keys, perKey)
	counts := conn.Counts(b.consumer(0).Name)
	if n := flaky.Load(); n != 3 {
		t.Errorf("the flaky fact was attempted %d times, want 3", n)
	}
	for e, want := range map[Event]uint64{Acked: keys * perKey, RetriedInPlace: 2, Poisoned: 0, Retried: 0, SequenceGap: 0, SequenceStepBack: 0} {
		if got := counts.Get(e); got != want {
			t.Errorf("%s: counted %d, want %d", e, got, want)
		}
	}
	for _, shard := range b.consumer(0).Shards {
		if n := b.depth(shard); n != 0 {
			t.Errorf("shard %s still holds %d facts", shard, n)
		}
	}
}

// Two instances (two connections) of one ordered consumer: each shard has
// one active consumer, so no key is handled by both at once, and when one
// instance stops half way the other takes its shards over in order.
func TestOrderedConsumerTwoInstances(t *testing.T) {
	b := newBroker(t, orderedSpec("ordered2"))
	pubConn := b.dial(Config{})
	pub, err := NewPublisher(pubConn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	const keys, perKey, writers = 40, 50, 4
	publishOwned(t, pub, keys, perKey, writers)

	h := newHandled()
	var perInstance [2]atomic.Int32
	var stops [2]func() error
	for i := range 2 {
		conn := b.dial(Config{})
		c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(ctx context.Context, d Delivery, it item) error {
			return h.run(it, func() error { perInstance[i].Add(1); return nil })
		})})
		if err != nil {
			t.Fatal(err)
		}
		stops[i] = run(t, c)
	}
	testenv.Eventually(t, "half the facts handled", func() bool { return h.count() >= keys*perKey/2 })
	first := 0
	if perInstance[1].Load() > perInstance[0].Load() {
		first = 1
	}
	if err := stops[first](); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "all facts handled", func() bool { return h.count() >= keys*perKey })
	if err := stops[1-first](); err != nil {
		t.Fatal(err)
	}
	h.checkInOrder(t, keys, perKey)
	t.Logf("instance %d handled %d facts, then stopped; instance %d handled %d", first, perInstance[first].Load(), 1-first, perInstance[1-first].Load())
	if perInstance[1-first].Load() == 0 {
		t.Errorf("the remaining instance handled nothing after the other stopped")
	}
}
