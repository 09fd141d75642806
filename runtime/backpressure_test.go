package runtime

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

func TestTopicMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, key string
		want         bool
	}{
		{"item.added", "item.added", true}, {"item.*", "item.added", true}, {"item.*", "item.added.x", false},
		{"item.#", "item", true}, {"item.#", "item.a.b", true}, {"#", "a.b", true}, {"#.b", "a.b", true},
		{"*.b", "b", false}, {"item.added", "item.removed", false}, {"a.#.c", "a.c", true}, {"a.#.c", "a.x.y.c", true},
	} {
		if got := topology.TopicMatch(c.pattern, c.key); got != c.want {
			t.Errorf("TopicMatch(%q, %q) = %v, want %v", c.pattern, c.key, got, c.want)
		}
	}
}

// fill publishes item.added facts until the first error and returns how
// many were accepted and that error; it gives up after limit+2 accepted.
func fill(t *testing.T, pub *Publisher, limit int) (int, error) {
	t.Helper()
	for n := range limit + 3 {
		if _, err := pub.Publish(context.Background(), itemFact("item.added"), item{SKU: "s", N: n}); err != nil {
			return n, err
		}
	}
	t.Fatalf("%d publishes into a queue bounded at %d were all accepted", limit+3, limit)
	return 0, nil
}

// A work queue with maxLength refuses publishes once full: the publisher
// gets an error that matches ErrRejected and names the queue, and a publish
// succeeds again once the queue drains. A classic queue accepts exactly
// maxLength messages; a quorum queue (RabbitMQ 3.10) checks the bound
// before it enqueues, so it accepts one more.
func TestBoundedQueueRejectsPublishesUntilItDrains(t *testing.T) {
	for _, qt := range []topology.QueueType{topology.Classic, topology.Quorum} {
		t.Run(string(qt), func(t *testing.T) {
			const limit = 3
			b := newBroker(t, topology.ConsumerSpec{Name: "bounded", QueueType: qt, Bindings: []string{"item.added"}, MaxAttempts: 1, MaxLength: limit})
			conn := b.dial(Config{})
			work := b.consumer(0).Queue
			pub, _ := NewPublisher(conn, b.events())
			accepted, err := fill(t, pub, limit)
			var re *RejectedError
			if !errors.Is(err, ErrRejected) || !errors.As(err, &re) || !slices.Equal(re.Queues, []string{work}) || !errors.Is(err, ErrNacked) {
				t.Fatalf("publish into a full queue: %v, want a RejectedError naming %s", err, work)
			}
			if want := map[topology.QueueType][]int{topology.Classic: {limit}, topology.Quorum: {limit, limit + 1}}[qt]; !slices.Contains(want, accepted) {
				t.Errorf("%s queue bounded at %d accepted %d, want one of %v", qt, limit, accepted, want)
			}
			t.Logf("%s queue bounded at %d accepted %d", qt, limit, accepted)
			if n := b.depth(work); n != accepted {
				t.Errorf("full queue holds %d, want the %d accepted", n, accepted)
			}
			b.get(work) // the consumer catches up by one
			b.get(work)
			if _, err := pub.Publish(context.Background(), itemFact("item.added"), item{SKU: "s"}); err != nil {
				t.Errorf("publish after the queue drained: %v", err)
			}
		})
	}
}

// A fact routed to a full bounded queue and to a queue with room: RabbitMQ
// nacks the publish (reject-publish refuses it for the full queue) yet
// delivers it to the queue with room. The publisher reports the rejection
// naming the full queue; the other consumer got the fact. A publisher that
// republishes on ErrRejected therefore duplicates it there: consumers are
// idempotent by message id, which is what makes that safe.
func TestFullQueueAmongSeveralNacksButOthersReceive(t *testing.T) {
	b := newBroker(t,
		topology.ConsumerSpec{Name: "small", QueueType: topology.Classic, Bindings: []string{"item.added"}, MaxAttempts: 1, MaxLength: 1},
		topology.ConsumerSpec{Name: "roomy", Bindings: []string{"item.*"}, MaxAttempts: 1},
	)
	conn := b.dial(Config{})
	small, roomy := b.consumer(0).Queue, b.consumer(1).Queue
	pub, _ := NewPublisher(conn, b.events())
	ctx := context.Background()
	if _, err := pub.Publish(ctx, itemFact("item.added"), item{SKU: "s"}); err != nil {
		t.Fatal(err)
	}
	_, err := pub.Publish(ctx, itemFact("item.added"), item{SKU: "s", N: 1})
	var re *RejectedError
	if !errors.As(err, &re) || !slices.Equal(re.Queues, []string{small}) {
		t.Fatalf("publish with %s full: %v, want a RejectedError naming it alone", small, err)
	}
	// A quorum queue's depth trails its confirms a little: wait for the
	// second fact to show in roomy, then check small never took it.
	testenv.Eventually(t, roomy+" to hold both facts (the broker delivered the rejected one there)", func() bool { return b.depth(roomy) == 2 })
	if s := b.depth(small); s != 1 {
		t.Errorf("after the rejected publish: %s holds %d, want 1", small, s)
	}
	// A key that reaches only the unbounded queue is not affected.
	if _, err := pub.Publish(ctx, itemFact("item.removed"), item{SKU: "s"}); err != nil {
		t.Errorf("publish to the unbounded queue alone: %v", err)
	}
}
