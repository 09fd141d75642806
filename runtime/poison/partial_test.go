package poison_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/warrenbus/warren/runtime/poison"
)

// listIDs lists c's whole poison queue and returns the ids in queue order.
func (l *lane) listIDs() []string {
	l.t.Helper()
	got, err := poison.List(context.Background(), l.conn, l.a, poison.Filter{})
	if err != nil {
		l.t.Fatal(err)
	}
	return ids(got)
}

// A read that stops at its limit, or at the message it looked for,
// changes nothing, order included: a quorum queue puts what a scan hands
// back behind what it did not reach, so every scan reads to the end of
// the queue. Consecutive limited listings (a replay's dry run) then list
// the same messages, and the replay with the same selection moves them.
func TestPartialReadsKeepTheOrder(t *testing.T) {
	l := newLane(t)
	ctx := context.Background()
	archive := poison.DiscardQueue(l.a)
	t.Cleanup(func() {
		if _, err := l.channel().QueueDelete(archive, false, false, false); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	all := []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}
	for i, id := range all {
		key := "item.added"
		if i%2 == 1 {
			key = "item.removed"
		}
		l.poisonCopy(l.a, id, key, "boom", 2)
	}

	for _, tc := range []struct {
		f    poison.Filter
		want []string
	}{
		{poison.Filter{Limit: 2}, []string{"m1", "m2"}},
		{poison.Filter{Limit: 1, RoutingKey: "item.removed"}, []string{"m2"}},
		{poison.Filter{Limit: 2, IDs: []string{"m5", "m3", "m6"}}, []string{"m3", "m5"}},
	} {
		for run := 1; run <= 3; run++ {
			got, err := poison.List(ctx, l.conn, l.a, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("List(%+v), run %d: %v, want %v", tc.f, run, ids(got), tc.want)
			}
		}
		if got := l.listIDs(); !slices.Equal(got, all) {
			t.Fatalf("after List(%+v) the queue is %v, want %v", tc.f, got, all)
		}
	}

	// The replay moves what the listing listed; the rest keeps its order.
	done, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{Limit: 1, RoutingKey: "item.removed"})
	if err != nil || !slices.Equal(ids(done), []string{"m2"}) {
		t.Fatalf("Replay: %v, %v; want [m2]", ids(done), err)
	}
	all = slices.DeleteFunc(all, func(id string) bool { return id == "m2" })
	if got := l.listIDs(); !slices.Equal(got, all) {
		t.Fatalf("after the replay the queue is %v, want %v", got, all)
	}
	done, err = poison.Discard(ctx, l.conn, l.a, poison.Filter{Limit: 1, RoutingKey: "item.added", IDs: []string{"m3", "m5"}}, "test")
	if err != nil || !slices.Equal(ids(done), []string{"m3"}) {
		t.Fatalf("Discard: %v, %v; want [m3]", ids(done), err)
	}
	all = slices.DeleteFunc(all, func(id string) bool { return id == "m3" })
	if got := l.listIDs(); !slices.Equal(got, all) {
		t.Fatalf("after the discard the queue is %v, want %v", got, all)
	}

	// An edit refused, and one done, leave the others in their order.
	refuse := errors.New("no")
	_, err = poison.EditMessage(ctx, l.conn, l.a, poison.Edit{ID: "m5", Payload: []byte(`{}`),
		Validate: func(string, []byte) error { return refuse }})
	if !errors.Is(err, refuse) {
		t.Fatalf("refused edit: %v", err)
	}
	if got := l.listIDs(); !slices.Equal(got, all) {
		t.Fatalf("after a refused edit the queue is %v, want %v", got, all)
	}
	if _, err := poison.EditMessage(ctx, l.conn, l.a, poison.Edit{ID: "m4", Payload: []byte(`{"sku":"y"}`),
		Validate: func(string, []byte) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	all = slices.DeleteFunc(all, func(id string) bool { return id == "m4" })
	if got := l.listIDs(); !slices.Equal(got, all) {
		t.Fatalf("after an edit the queue is %v, want %v", got, all)
	}
}
