package runtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// A backlog of 5,000 low-priority facts, then 10 high-priority ones: the
// consumer of a priority work queue handles the 10 before the backlog
// drains. The fact's default priority is 0; WithPriority overrides it for
// the publish call.
func TestHighPriorityOvertakesTheBacklog(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "prio", QueueType: topology.Classic, Bindings: []string{"item.added"},
		MaxAttempts: 1, MaxPriority: 10, Concurrency: 1, Prefetch: 1})
	// At most one low fact was already on its way.
	overtakes(t, b, 9, 10+1)
}

// On RabbitMQ 4 a quorum work queue with maxPriority 5 has two levels
// (priority 5 and above first); 4.x serves high and normal messages 2:1 so
// that normal ones are not starved, so the 10 urgent facts come within
// the first 16 rather than strictly first. On RabbitMQ 3, whose quorum
// queues have no priorities, declaring it fails.
func TestQuorumPriorityOnRabbitMQ4(t *testing.T) {
	spec := topology.ConsumerSpec{Name: testenv.Name("qprio"), Bindings: []string{"item.added"},
		MaxAttempts: 1, MaxPriority: topology.QuorumMaxPriority, Concurrency: 1, Prefetch: 1}
	if probe := newBroker(t); brokerOf(transport.Network{Connection: probe.raw}) < topology.RabbitMQ4 {
		top, err := topology.Build(topology.Spec{Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
			Consumers: []topology.ConsumerSpec{spec}})
		if err != nil {
			t.Fatal(err)
		}
		conn := probe.dial(Config{Topology: &topology.Topology{}})
		err = conn.Declare(context.Background(), top)
		if err == nil || !strings.Contains(err.Error(), "maxPriority on a quorum queue needs RabbitMQ 4.0 or later") {
			t.Fatalf("Declare of a quorum priority queue on RabbitMQ 3: %v; want a refusal", err)
		}
		// Refused before anything was declared.
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, top.Consumers[0].PoisonQueue); !errors.Is(err, amqpmsg.ErrNoQueue) {
			t.Errorf("after the refusal, inspecting %s: %v; want no such queue", top.Consumers[0].PoisonQueue, err)
		}
		return
	}
	b := newBroker(t, spec)
	overtakes(t, b, topology.QuorumHighPriority, 10+10/2+1)
}

// overtakes publishes a backlog of 5,000 facts of priority 0, then 10 of
// priority high, consumes 100 and fails t unless all 10 were among the
// first within handled and the backlog did not drain.
func overtakes(t *testing.T, b *broker, high uint8, within int) {
	t.Helper()
	conn := b.dial(Config{})
	pub, _ := NewPublisher(conn, b.events())
	low := itemFact("item.added")
	const backlog, urgent = 5000, 10
	for i := range backlog {
		mustPublish(t, pub, low, item{SKU: "low", N: i})
	}
	for i := range urgent {
		mustPublish(t, pub, low.WithPriority(high), item{SKU: "high", N: i})
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
	highs := 0
	var at []int
	for i, sku := range order {
		if sku == "high" {
			highs++
			at = append(at, i)
			if i >= within {
				t.Errorf("high-priority fact handled at position %d of %d, want within the first %d", i, len(order), within)
			}
		}
	}
	t.Logf("high-priority facts handled at positions %v", at)
	if highs != urgent {
		t.Errorf("%d high-priority facts among the first %d handled, want %d", highs, len(order), urgent)
	}
	if b.depth(b.consumer(0).Queue) == 0 {
		t.Error("the backlog drained: the test did not show overtaking")
	}
}

// A quorum queue has two priority levels (on RabbitMQ 4): Build refuses
// any maxPriority but theirs, and the queue gets no x-max-priority.
func TestQuorumMaxPriorityIsTwoLevels(t *testing.T) {
	_, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{Name: "q", Bindings: []string{"a.b"}, MaxPriority: 9}}})
	if err == nil || !strings.Contains(err.Error(), `maxPriority 9: a quorum queue has two levels on RabbitMQ 4`) {
		t.Errorf("Build with maxPriority 9 on a quorum queue: %v", err)
	}
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{Name: "q", Bindings: []string{"a.b"}, MaxPriority: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	work, _ := top.Queue("q")
	if _, ok := work.ArgumentsFor(topology.RabbitMQ4)["x-max-priority"]; ok || work.CheckFor(topology.RabbitMQ4) != nil || work.CheckFor(topology.RabbitMQ3) == nil {
		t.Errorf("quorum work queue with maxPriority 5: arguments %v, check on 4.x %v, on 3.x %v; want no x-max-priority, accepted on 4.x only",
			work.ArgumentsFor(topology.RabbitMQ4), work.CheckFor(topology.RabbitMQ4), work.CheckFor(topology.RabbitMQ3))
	}
}

// A fact's default priority (generated from x-priority) travels with every
// message; WithPriority overrides it for one publish.
func TestFactDefaultPriorityAndOverride(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "defprio", QueueType: topology.Classic, Bindings: []string{"item.added"}, MaxAttempts: 1, MaxPriority: 9})
	pub, _ := NewPublisher(b.dial(Config{}), b.events())
	f := itemFact("item.added")
	f.Priority = 7
	mustPublish(t, pub, f, item{SKU: "default"})
	mustPublish(t, pub, f.WithPriority(2), item{SKU: "override"})
	for _, want := range []uint8{7, 2} {
		if d := b.get(b.consumer(0).Queue); d.Priority != want {
			t.Errorf("message priority %d, want %d", d.Priority, want)
		}
	}
}
