package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/topology"
)

// Every argument the topology uses is accepted by the broker, and declaring
// the same topology again changes nothing.
func TestDeclareTwiceIsANoOp(t *testing.T) {
	b := newBroker(t,
		topology.ConsumerSpec{Name: "quorum", Bindings: []string{"a.#"}, Backoff: testLadder},
		topology.ConsumerSpec{Name: "classic", Bindings: []string{"a.#", "b.*"}, QueueType: topology.Classic, Backoff: testLadder},
	)
	conn := b.dial(Config{}) // declares once more on connect
	ctx := context.Background()
	if err := conn.Declare(ctx, b.top); err != nil {
		t.Fatalf("second declaration: %v", err)
	}
	for _, q := range b.top.Queues {
		if n := b.depth(q.Name); n != 0 {
			t.Errorf("queue %s: %d messages", q.Name, n)
		}
	}
}

// Declaring over a queue with other arguments is an error that names the
// queue and the argument, and leaves the connection usable.
func TestDeclareMismatchNamesQueueAndArgument(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "drift", Bindings: []string{"a.#"}, Backoff: testLadder, DeliveryLimit: 3})
	conn := b.dial(Config{})
	ctx := context.Background()
	work := b.consumer(0).Queue

	changed := func(edit func(q *topology.Queue)) topology.Topology {
		t2 := b.top
		t2.Queues = slices.Clone(b.top.Queues)
		for i := range t2.Queues {
			if t2.Queues[i].Name == work {
				edit(&t2.Queues[i])
			}
		}
		return t2
	}
	for _, tc := range []struct {
		edit func(q *topology.Queue)
		arg  string
	}{
		{func(q *topology.Queue) { q.DeliveryLimit = 5 }, "x-delivery-limit"},
		{func(q *topology.Queue) { q.Type = topology.Classic }, "x-queue-type"},
		{func(q *topology.Queue) { q.MessageTTL = time.Second }, "x-message-ttl"},
	} {
		err := conn.Declare(ctx, changed(tc.edit))
		var m *MismatchError
		if !errors.As(err, &m) || m.Kind != "queue" || m.Name != work || m.Argument != tc.arg {
			t.Errorf("declare with a different %s: %v, want a MismatchError for queue %q", tc.arg, err, work)
			continue
		}
		if !strings.Contains(err.Error(), work) || !strings.Contains(err.Error(), tc.arg) {
			t.Errorf("error %q does not name the queue and the argument", err)
		}
	}
	if err := conn.Declare(ctx, b.top); err != nil {
		t.Errorf("the original topology after the mismatches: %v", err)
	}

	// Dial does not retry a mismatch: it cannot heal by itself.
	bad := changed(func(q *topology.Queue) { q.DeliveryLimit = 7 })
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := Dial(dctx, Config{URLs: []string{b.url}, Topology: &bad, Logger: b.logs})
	var m *MismatchError
	if !errors.As(err, &m) || dctx.Err() != nil {
		t.Errorf("Dial with a conflicting topology: %v, want a MismatchError at once", err)
	}
}

// A consumer of a queue that was never declared stops with an error that
// says so, rather than retrying forever.
func TestConsumerOfAMissingQueueFails(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "ghost", Bindings: []string{"a.#"}, Backoff: testLadder})
	empty := topology.Topology{}
	conn := b.dial(Config{Topology: &empty})
	spec := b.consumer(0)
	spec.Queue += "-missing"
	c, err := NewConsumer(conn, spec, []Route{Handle(itemFact("a.b"), func(context.Context, Delivery, item) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), spec.Queue) || !strings.Contains(err.Error(), "does not exist") || ctx.Err() != nil {
		t.Errorf("Run on a missing queue: %v", err)
	}
}
