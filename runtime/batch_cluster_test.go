package runtime

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// While facts are published and a batch consumer takes them a hundred at
// a time, the node that leads the work queue (and that both connections
// use) is stopped: the batches in hand come back, every confirmed fact is
// handled at least once, and the consumer goes on through another node.
func TestClusterBatchConsumerLeaderStops(t *testing.T) {
	const total, workers = 5000, 10
	b, c := newClusterBroker(t, topology.ConsumerSpec{Name: "batchleader", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 2, Batch: &topology.Batch{Size: 100, Wait: 50 * time.Millisecond}})
	spec := b.consumer(0)
	leader := c.Queue(t, spec.Queue, "").Leader
	cfg := Config{URLs: c.URLsFrom(leader), Logger: slog.New(&logRecorder{})}
	pubConn, subConn := b.dial(cfg), b.dial(cfg)

	f := newClusterFlow()
	fact := itemFact("item.added")
	var batches atomic.Int32
	cons, err := NewBatchConsumer(subConn, spec, []Route{collectItems(fact)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		batches.Add(1)
		for _, it := range batch.items {
			f.handle(it.Fact.N)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, cons)
	pub, _ := NewPublisher(pubConn, b.events())
	var published atomic.Int32
	// The facts past 2,500 wait for the stop to be made (publishAllHeld).
	stopMade := make(chan struct{})
	wg := publishAllHeld(pub, f, 0, total, workers, time.Millisecond, &published, nil, 2500, stopMade)

	testenv.Eventually(t, "the flow to reach 1,500 facts", func() bool { return published.Load() >= 1500 })
	c.Stop(t, leader)
	close(stopMade)
	if p := published.Load(); p >= total {
		t.Fatalf("the stop came after all %d facts were published; it proved nothing", p)
	}
	wg.Wait()
	waitHandled(t, f)
	confirmed, failed, handled := f.counts()
	_, dups := f.lost()
	t.Logf("sent %d, confirmed %d, publish errors %d, handled %d in %d batches, duplicates %d, lost 0; leader %s stopped",
		total, confirmed, failed, handled, batches.Load(), dups, leader)
	if failed != 0 {
		t.Errorf("%d publishes failed: %v", failed, firstError(f))
	}
}
