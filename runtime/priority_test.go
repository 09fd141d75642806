package runtime

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// A backlog of 5,000 low-priority facts, then 10 high-priority ones: the
// consumer of a priority work queue handles the 10 before the backlog
// drains. The fact's default priority is 0; WithPriority overrides it for
// the publish call.
func TestHighPriorityOvertakesTheBacklog(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "prio", QueueType: topology.Classic, Bindings: []string{"item.added"},
		MaxAttempts: 1, MaxPriority: 10, Concurrency: 1, Prefetch: 1})
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	low := itemFact("item.added")
	const backlog, urgent = 5000, 10
	for i := range backlog {
		mustPublish(t, pub, low, item{SKU: "low", N: i})
	}
	for i := range urgent {
		mustPublish(t, pub, low.WithPriority(9), item{SKU: "high", N: i})
	}
	if n := b.depth(b.consumer(0).Queue); n != backlog+urgent {
		t.Fatalf("work queue holds %d, want %d", n, backlog+urgent)
	}

	var mu sync.Mutex
	var order []string
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(low, func(ctx context.Context, d Delivery, it item) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, it.SKU)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	handled := func() int { mu.Lock(); defer mu.Unlock(); return len(order) }
	testenv.Eventually(t, "100 facts handled", func() bool { return handled() >= 100 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	last := strings.LastIndex(strings.Join(order, ","), "high")
	highs := 0
	for i, sku := range order {
		if sku == "high" {
			highs++
			if i >= urgent+1 { // at most one low fact was already on its way
				t.Errorf("high-priority fact handled at position %d of %d", i, len(order))
			}
		}
	}
	if highs != urgent || last < 0 {
		t.Errorf("%d high-priority facts among the first %d handled, want %d", highs, len(order), urgent)
	}
	if b.depth(b.consumer(0).Queue) == 0 {
		t.Error("the backlog drained: the test did not show overtaking")
	}
}

// maxPriority on a quorum queue would be ignored: Build refuses it.
func TestMaxPriorityNeedsClassicQueues(t *testing.T) {
	_, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{Name: "q", Bindings: []string{"a.b"}, MaxPriority: 5}}})
	if err == nil || !strings.Contains(err.Error(), `maxPriority 5: needs queueType "classic"; quorum queues would ignore it`) {
		t.Errorf("Build with maxPriority on a quorum queue: %v", err)
	}
}
