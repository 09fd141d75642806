package runtime

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// v1Batch is a generated batch type of a consumer pinned to version 1.
type v1Batch struct{ items []Item[itemV1] }

// v1Recorder keeps the facts a version-1 batch handler saw.
type v1Recorder struct {
	mu    sync.Mutex
	ids   []string
	codes []string
	keys  []string // routing keys
}

func (r *v1Recorder) add(b v1Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range b.items {
		r.ids = append(r.ids, it.Delivery.MessageID)
		r.codes = append(r.codes, it.Fact.Code)
		r.keys = append(r.keys, it.Delivery.RoutingKey)
	}
}

func (r *v1Recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.ids) }

// publishDual publishes one fact per code in versions 2 and 1 side by
// side, and returns the message ids.
func publishDual(t *testing.T, conn *Conn, b *broker, v1, v2 Fact, codes ...string) []string {
	t.Helper()
	p, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(codes))
	for i, code := range codes {
		id, err := p.PublishVersions(context.Background(), Copy{Fact: v2, Payload: item{SKU: code, N: 2}}, Copy{Fact: v1, Payload: itemV1{Code: code}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// checkDualSettled waits until consumer spec settled n facts published in
// two versions (each one message, handled once) and checks that none was
// poisoned and rec saw each id once.
func checkDualSettled(t *testing.T, conn *Conn, b *broker, spec topology.Consumer, rec *v1Recorder, ids []string) {
	t.Helper()
	n := uint64(len(ids))
	testenv.Eventually(t, "every fact settled", func() bool {
		c := conn.Counts(spec.Name)
		return c.Get(Acked)+c.Get(DuplicateSkipped)+c.Get(Poisoned) >= n
	})
	time.Sleep(200 * time.Millisecond) // nothing more comes
	c := conn.Counts(spec.Name)
	if c.Get(Delivered) != n || c.Get(Acked) != n || c.Get(DuplicateSkipped) != 0 || c.Get(Poisoned) != 0 {
		t.Errorf("delivered %d, acked %d, duplicate_skipped %d, poisoned %d; want %d, %d, 0, 0",
			c.Get(Delivered), c.Get(Acked), c.Get(DuplicateSkipped), c.Get(Poisoned), n, n)
	}
	if d := b.depth(spec.PoisonQueue); d != 0 {
		t.Errorf("poison queue holds %d, want 0", d)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got, want := slices.Clone(rec.ids), slices.Clone(ids)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("handled message ids %v, want each of %v once", got, want)
	}
}

// A fact published in versions 1 and 2 side by side reaches a batch
// consumer pinned to version 1 once, as one message: its handler gets the
// version 1 it reads, never poisoned.
func TestBatchConsumerPinnedToVersionReadsItsVersionOfADualPublish(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "batch-pinned-v1", Bindings: []string{"item.#"}, MaxAttempts: 1,
		Prefetch: 20, Batch: &topology.Batch{Size: 8, Wait: 200 * time.Millisecond}})
	conn := b.dial(Config{Logger: testLogger(t)})
	spec := b.consumer(0)
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	// Waiting in the queue before the consumer starts: one message per
	// fact, which land in one batch.
	ids := publishDual(t, conn, b, v1, v2, "A-1", "A-2", "A-3")
	testenv.Eventually(t, "three messages in the work queue", func() bool { return b.depth(spec.Queue) == 3 })
	rec := &v1Recorder{}
	c, err := NewBatchConsumer(conn, spec, []Route{Collect(v1, func(b *v1Batch, it Item[itemV1]) { b.items = append(b.items, it) })},
		func(_ context.Context, batch v1Batch) (Outcomes, error) {
			rec.add(batch)
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	checkDualSettled(t, conn, b, spec, rec, ids)
	// And one published while it runs: the same.
	ids = append(ids, publishDual(t, conn, b, v1, v2, "A-4")...)
	checkDualSettled(t, conn, b, spec, rec, ids)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.codes, []string{"A-1", "A-2", "A-3", "A-4"}) {
		t.Errorf("handled codes %v, want the version-1 copies A-1 to A-4 in order", rec.codes)
	}
}

// The same for an ordered batch consumer pinned to version 1: each fact
// one message in its key's order.
func TestOrderedBatchConsumerPinnedToVersionReadsItsVersionOfADualPublish(t *testing.T) {
	spec := orderedSpec("ordered-batch-pinned-v1")
	spec.Shards, spec.Concurrency, spec.MaxAttempts = 2, 1, 1
	spec.Batch = &topology.Batch{Size: 8, Wait: 200 * time.Millisecond}
	b := newBroker(t, spec)
	conn := b.dial(Config{Logger: testLogger(t)})
	v1, v2 := itemV1Fact("item.added"), orderedFact()
	v1.OrderingKey = "/code"
	ids := publishDual(t, conn, b, v1, v2, "k-1", "k-2", "k-3", "k-1", "k-2")
	rec := &v1Recorder{}
	c, err := NewBatchConsumer(conn, b.consumer(0), []Route{Collect(v1, func(b *v1Batch, it Item[itemV1]) { b.items = append(b.items, it) })},
		func(_ context.Context, batch v1Batch) (Outcomes, error) {
			rec.add(batch)
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	checkDualSettled(t, conn, b, b.consumer(0), rec, ids)
}
