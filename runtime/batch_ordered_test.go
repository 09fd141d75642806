package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// keyedBatches records what an ordered batch consumer's handlers saw: the
// facts done per key in the order they were done, every batch that held
// two facts of one key, and every moment two batches held one key.
type keyedBatches struct {
	mu       sync.Mutex
	byKey    map[string][]int
	done     int
	sizes    []int
	inFlight sync.Map // key -> *atomic.Int32
	overlaps atomic.Int32
}

// handle runs one batch: it marks each fact's key busy for the batch,
// asks outcome for each fact (nil: done), and records the done ones.
func (k *keyedBatches) handle(batch testBatch, outcome func(item) error) Outcomes {
	for _, it := range batch.items {
		v, _ := k.inFlight.LoadOrStore(it.Fact.SKU, new(atomic.Int32))
		if v.(*atomic.Int32).Add(1) > 1 {
			k.overlaps.Add(1)
		}
		defer v.(*atomic.Int32).Add(-1)
	}
	out := Outcomes{}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sizes = append(k.sizes, len(batch.items))
	for _, it := range batch.items {
		if err := outcome(it.Fact); err != nil {
			out.Fail(it.Delivery.MessageID, err)
			continue
		}
		out.Done(it.Delivery.MessageID)
		k.byKey[it.Fact.SKU] = append(k.byKey[it.Fact.SKU], it.Fact.N)
		k.done++
	}
	return out
}

func (k *keyedBatches) count() int { k.mu.Lock(); defer k.mu.Unlock(); return k.done }

// An ordered batch consumer on the broker: 1,200 facts over 40 keys
// through four shards and two handlers of batches of 16. Every batch holds
// at most one fact per key, no key is in two batches at once, each key's
// facts are done in publish order, a fact that fails twice is retried in
// place without its key's later facts overtaking it, and a fact that fails
// its schema goes to poison before the handler without holding its key.
func TestOrderedBatchKeepsPublishOrderPerKey(t *testing.T) {
	spec := orderedSpec("ordered-batch")
	spec.Concurrency = 2
	spec.Batch = &topology.Batch{Size: 16, Wait: 20 * time.Millisecond}
	b := newBroker(t, spec)
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	const keys, perKey, writers = 40, 30, 4
	publishOwned(t, pub, keys, perKey, writers)
	// Unchecked at publish, refused by the consumer: an empty sku.
	unchecked := orderedFact()
	unchecked.Validate = nil
	mustPublish(t, pub, unchecked, item{SKU: "", N: 0})

	k := &keyedBatches{byKey: map[string][]int{}}
	var flaky atomic.Int32
	spec2 := b.consumer(0)
	c, err := NewBatchConsumer(conn, spec2, []Route{collectItems(orderedFact())}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		return k.handle(batch, func(it item) error {
			if it.SKU == "key-007" && it.N == 10 && flaky.Add(1) <= 2 {
				return errors.New("flaky dependency")
			}
			return nil
		}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	testenv.Eventually(t, "all facts done", func() bool { return k.count() >= keys*perKey })
	testenv.Eventually(t, "the unchecked fact in poison", func() bool { return b.depth(spec2.PoisonQueue) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.byKey) != keys {
		t.Errorf("facts of %d keys done, want %d", len(k.byKey), keys)
	}
	for key, got := range k.byKey {
		want := make([]int, perKey)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Errorf("key %s: done %v, want 0..%d in order", key, got, perKey-1)
		}
	}
	if n := k.overlaps.Load(); n > 0 {
		t.Errorf("%d times a key was in a batch twice, or in two batches at once", n)
	}
	if n := flaky.Load(); n != 3 {
		t.Errorf("the flaky fact was attempted %d times, want 3", n)
	}
	if slices.Max(k.sizes) < 2 {
		t.Errorf("batch sizes %v: want batches of several keys", k.sizes)
	}
	counts := conn.Counts(spec2.Name)
	for e, want := range map[Event]uint64{Acked: keys * perKey, RetriedInPlace: 2, Poisoned: 1, Retried: 0} {
		if got := counts.Get(e); got != want {
			t.Errorf("%s: counted %d, want %d", e, got, want)
		}
	}
	d := b.get(spec2.PoisonQueue)
	if f, _ := d.Headers[HeaderFailure].(string); !strings.Contains(f, "payload of item.added does not match its schema: /sku") {
		t.Errorf("poison x-failure %q, want the schema failure", f)
	}
	for _, shard := range spec2.Shards {
		if n := b.depth(shard); n != 0 {
			t.Errorf("shard %s still holds %d facts", shard, n)
		}
	}
}

// An ordered batch consumer whose handler fails a fact for good: it goes
// to poison with its own failure, and its key's later facts go on (the
// default) in order.
func TestOrderedBatchPoisonsAFactAndItsKeyGoesOn(t *testing.T) {
	spec := orderedSpec("ordered-batch-poison")
	spec.Shards, spec.Concurrency = 1, 1
	// Two keys never fill a batch of 8: each closes at its wait, with both.
	spec.Batch = &topology.Batch{Size: 8, Wait: 300 * time.Millisecond}
	b := newBroker(t, spec)
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		for _, sku := range []string{"a", "b"} {
			mustPublish(t, pub, orderedFact(), item{SKU: sku, N: n})
		}
	}
	k := &keyedBatches{byKey: map[string][]int{}}
	c, err := NewBatchConsumer(conn, b.consumer(0), []Route{collectItems(orderedFact())}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		return k.handle(batch, func(it item) error {
			if it.SKU == "a" && it.N == 1 {
				return Permanent(fmt.Errorf("order %s/%d cannot be booked", it.SKU, it.N))
			}
			return nil
		}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	testenv.Eventually(t, "five facts done", func() bool { return k.count() == 5 })
	d := b.get(b.consumer(0).PoisonQueue)
	if f, _ := d.Headers[HeaderFailure].(string); !strings.Contains(f, "order a/1 cannot be booked") {
		t.Errorf("poison x-failure %q, want the handler's error", f)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !slices.Equal(k.byKey["a"], []int{0, 2}) || !slices.Equal(k.byKey["b"], []int{0, 1, 2}) {
		t.Errorf("done %v, want a: [0 2] and b: [0 1 2]", k.byKey)
	}
	// One fact per key in a batch: three rounds of two keys.
	if !slices.Equal(k.sizes, []int{2, 2, 2}) {
		t.Errorf("batch sizes %v, want [2 2 2]", k.sizes)
	}
}
