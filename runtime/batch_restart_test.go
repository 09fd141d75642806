package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// The broker is restarted (stop_app, start_app on the test's own node)
// while a batch is in the handler: the batch's acks cannot land, so its
// facts come back, and once the broker is back every fact it confirmed is
// handled, none lost.
func TestDisruptiveBrokerRestartDuringABatch(t *testing.T) {
	testenv.Disruptive(t)
	node := startRabbitNode(t)
	b := newBrokerAt(t, node.url(), topology.ConsumerSpec{Name: "batch-restart", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 2, Batch: &topology.Batch{Size: 50, Wait: 100 * time.Millisecond}})
	conn := b.dial(Config{})
	spec, f := b.consumer(0), itemFact("item.added")
	const total = 500
	want := map[string]bool{}
	for _, id := range publishItems(t, conn, b, f, skus(total)...) {
		want[id] = true
	}

	var mu sync.Mutex
	handled := map[string]int{}
	inBatch, restarted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c, err := NewBatchConsumer(conn, spec, []Route{collectItems(f)}, func(ctx context.Context, batch testBatch) (Outcomes, error) {
		first := false
		once.Do(func() { first = true; close(inBatch) })
		if first {
			<-restarted // the broker went away under this batch
		}
		mu.Lock()
		defer mu.Unlock()
		for _, it := range batch.items {
			handled[it.Delivery.MessageID]++
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	<-inBatch
	node.ctl("stop_app")
	time.Sleep(2 * time.Second)
	node.ctl("start_app")
	close(restarted)

	testenv.Eventually(t, fmt.Sprintf("all %d facts handled after the restart", total), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) >= total
	})
	mu.Lock()
	defer mu.Unlock()
	again := 0
	for id, n := range handled {
		if !want[id] {
			t.Errorf("fact %s handled, never published here", id)
		}
		again += n - 1
	}
	t.Logf("broker restart during a batch: %d facts handled, %d of them again (at least once)", len(handled), again)
}

func skus(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s-%d", i)
	}
	return out
}
