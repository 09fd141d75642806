package poison_test

import (
	"context"
	"slices"
	"testing"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
)

// Discard moves exactly the selected messages to <consumer>.discarded with
// the reason and every original header, and leaves the others in the
// poison queue; without a reason it changes nothing.
func TestDiscardKeepsTheSelectedMessagesWithTheReason(t *testing.T) {
	l := newLane(t)
	ctx := context.Background()
	archive := poison.DiscardQueue(l.a)
	t.Cleanup(func() {
		if _, err := l.channel().QueueDelete(archive, false, false, false); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, id := range []string{"m1", "m2", "m3"} {
		l.poisonCopy(l.a, id, "item.added", "boom", 2)
	}

	if _, err := poison.Discard(ctx, l.conn, l.a, poison.Filter{IDs: []string{"m1"}}, "  "); err == nil {
		t.Fatal("Discard without a reason succeeded")
	}
	if got := l.depth(l.a.PoisonQueue); got != 3 {
		t.Fatalf("after a refused discard the poison queue holds %d, want 3", got)
	}

	done, err := poison.Discard(ctx, l.conn, l.a, poison.Filter{IDs: []string{"m1", "m3"}}, "test data from the load test")
	if err != nil {
		t.Fatal(err)
	}
	if got := sorted(ids(done)); !slices.Equal(got, []string{"m1", "m3"}) {
		t.Errorf("discarded %v, want m1 and m3", got)
	}
	left := l.take(l.a.PoisonQueue)
	if len(left) != 1 || left[0].MessageId != "m2" {
		t.Errorf("poison queue keeps %d messages, want m2 alone", len(left))
	}
	kept := l.take(archive)
	if len(kept) != 2 {
		t.Fatalf("%s holds %d messages, want 2", archive, len(kept))
	}
	for _, d := range kept {
		if d.Headers[poison.HeaderDiscardReason] != "test data from the load test" || d.Headers[poison.HeaderDiscardedAt] == nil {
			t.Errorf("%s: discard headers %v", d.MessageId, d.Headers)
		}
		if d.Headers[runtime.HeaderFailure] != "boom" || d.Headers[runtime.HeaderOriginalRoutingKey] != "item.added" {
			t.Errorf("%s: the original headers are not kept: %v", d.MessageId, d.Headers)
		}
	}
}

// Replay with IDs moves the chosen messages and no others.
func TestReplaySelectedIDs(t *testing.T) {
	l := newLane(t)
	for _, id := range []string{"m1", "m2", "m3"} {
		l.poisonCopy(l.a, id, "item.added", "boom", 2)
	}
	done, err := poison.Replay(context.Background(), l.conn, l.a, poison.Filter{IDs: []string{"m2", "m3"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sorted(ids(done)); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Errorf("replayed %v, want m2 and m3", got)
	}
	if got := l.depth(l.a.Queue); got != 2 {
		t.Errorf("work queue holds %d, want 2", got)
	}
	if got := l.depth(l.a.PoisonQueue); got != 1 {
		t.Errorf("poison queue holds %d, want 1", got)
	}
}
