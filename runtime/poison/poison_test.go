package poison_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// lane is one test's topology on the real broker: consumers "a" and "b",
// both bound to item.*, removed again when the test ends.
type lane struct {
	t    *testing.T
	conn *runtime.Conn
	top  topology.Topology
	a, b topology.Consumer
}

// dial connects the way a service does: List and Replay work over the
// service's own *runtime.Conn.
func dial(t *testing.T) *runtime.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{testenv.AMQPURL(t)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func newLane(t *testing.T) *lane {
	t.Helper()
	return newLaneOf(t, false)
}

// newLaneOf is newLane, with the delay levels when delays is set.
func newLaneOf(t *testing.T, delays bool) *lane {
	t.Helper()
	conn := dial(t)
	top, err := topology.Build(topology.Spec{
		Delays:    delays,
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{
			{Name: testenv.Name("a"), Bindings: []string{"item.*"}, MaxAttempts: 2, Backoff: []time.Duration{20 * time.Millisecond}},
			{Name: testenv.Name("b"), Bindings: []string{"item.*"}, MaxAttempts: 1},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &lane{t: t, conn: conn, top: top, a: top.Consumers[0], b: top.Consumers[1]}
	t.Cleanup(l.cleanup)
	// As a service declares it: with the arguments of the broker's release line.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Declare(ctx, top); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *lane) cleanup() {
	ch, err := l.conn.OpenChannel(context.Background())
	if err != nil {
		l.t.Errorf("cleanup: %v", err)
		return
	}
	for _, q := range l.top.Queues {
		if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
			l.t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
		}
	}
	for _, e := range l.top.Exchanges {
		if err := ch.ExchangeDelete(e.Name, false, false); err != nil {
			l.t.Errorf("cleanup: delete exchange %s: %v", e.Name, err)
		}
	}
}

func (l *lane) channel() *amqp.Channel {
	l.t.Helper()
	ch, err := l.conn.OpenChannel(context.Background())
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { _ = ch.Close() })
	return ch
}

// publish sends a message and waits for the broker's confirm.
func (l *lane) publish(exchange, key string, msg amqp.Publishing) {
	l.t.Helper()
	ch := l.channel()
	if err := ch.Confirm(false); err != nil {
		l.t.Fatal(err)
	}
	msg.DeliveryMode = amqp.Persistent
	dc, err := ch.PublishWithDeferredConfirm(exchange, key, true, false, msg)
	if err != nil || !dc.Wait() {
		l.t.Fatalf("publish to %s/%s: %v", exchange, key, err)
	}
}

// poisonCopy puts a message into consumer c's poison queue the way the
// runtime does: through the dead exchange, with the failure headers.
func (l *lane) poisonCopy(c topology.Consumer, id, key, failure string, attempts int) {
	l.publish(c.DeadExchange, c.Name, amqp.Publishing{
		MessageId: id, ContentType: "application/json", Type: key,
		Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2024-05-01T10:00:00Z","payload":{"sku":"x"}}`, id),
		Headers: amqp.Table{
			runtime.HeaderAttempts:           int64(attempts),
			runtime.HeaderFailure:            failure,
			runtime.HeaderFailedAt:           "2024-05-01T10:00:05Z",
			runtime.HeaderConsumer:           c.Name,
			runtime.HeaderOriginalRoutingKey: key,
			runtime.HeaderOriginalExchange:   l.top.Exchanges[0].Name,
			runtime.HeaderFactVersion:        int64(1),
		},
	})
}

func (l *lane) depth(queue string) int {
	l.t.Helper()
	ch, err := l.conn.OpenChannel(context.Background())
	if err != nil {
		l.t.Fatal(err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return q.Messages
}

// take removes every message from a queue and returns them in order.
func (l *lane) take(queue string) []amqp.Delivery {
	l.t.Helper()
	ch := l.channel()
	var out []amqp.Delivery
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			l.t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

func ids(ms []poison.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func TestListLeavesEveryMessage(t *testing.T) {
	l := newLane(t)
	l.poisonCopy(l.a, "m1", "item.added", "reindex: catalogue 42 was deleted", 2)
	l.poisonCopy(l.a, "m2", "item.removed", "line one\nline two", 1)
	l.poisonCopy(l.a, "m3", "item.added", "boom", 2)
	ctx := context.Background()

	got, err := poison.List(ctx, l.conn, l.a, poison.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m1", "m2", "m3"}; !slices.Equal(ids(got), want) {
		t.Fatalf("listed %v, want %v in queue order", ids(got), want)
	}
	m := got[0]
	wantAt := time.Date(2024, 5, 1, 10, 0, 5, 0, time.UTC)
	if m.RoutingKey != "item.added" || m.Exchange != l.top.Exchanges[0].Name || m.Failure != "reindex: catalogue 42 was deleted" || m.Attempts != 2 || !m.FailedAt.Equal(wantAt) {
		t.Errorf("first message = %+v", m)
	}
	if got[1].Failure != "line one\nline two" {
		t.Errorf("failure of m2 = %q", got[1].Failure)
	}
	if n := l.depth(l.a.PoisonQueue); n != 3 {
		t.Fatalf("poison depth after List = %d, want 3: listing must not remove", n)
	}

	// Filters. A listing that stops at its limit still hands the whole
	// queue back in order (see the package comment), so each listing
	// finds the queue as it was.
	for _, tc := range []struct {
		f    poison.Filter
		want []string
	}{
		{poison.Filter{Limit: 2}, []string{"m1", "m2"}},
		{poison.Filter{Limit: 1, RoutingKey: "item.removed"}, []string{"m2"}},
		{poison.Filter{ID: "m3"}, []string{"m3"}},
		{poison.Filter{RoutingKey: "item.added"}, []string{"m1", "m3"}},
		{poison.Filter{ID: "absent"}, nil},
	} {
		got, err := poison.List(ctx, l.conn, l.a, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), tc.want) {
			t.Errorf("List(%+v) = %v, want %v", tc.f, ids(got), tc.want)
		}
	}
	if n := l.depth(l.a.PoisonQueue); n != 3 {
		t.Errorf("poison depth after listings = %d, want 3", n)
	}
}

func TestReplayMovesOnlyToTheWorkQueue(t *testing.T) {
	l := newLane(t)
	l.poisonCopy(l.a, "m1", "item.added", "boom 1", 2)
	l.poisonCopy(l.a, "m2", "item.added", "boom 2", 2)
	l.poisonCopy(l.a, "m3", "item.removed", "boom 3", 2)
	ctx := context.Background()

	done, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{ID: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(done), []string{"m2"}) {
		t.Fatalf("replayed %v, want [m2]", ids(done))
	}
	moved := l.take(l.a.Queue)
	if len(moved) != 1 || moved[0].MessageId != "m2" {
		t.Fatalf("work queue holds %d messages, want m2 alone", len(moved))
	}
	d := moved[0]
	if d.Exchange != "" || d.RoutingKey != l.a.Queue {
		t.Errorf("replayed through exchange %q key %q, want the default exchange and key %q", d.Exchange, d.RoutingKey, l.a.Queue)
	}
	for _, h := range []string{runtime.HeaderAttempts, runtime.HeaderFailure, runtime.HeaderFailedAt, runtime.HeaderConsumer} {
		if v, ok := d.Headers[h]; ok {
			t.Errorf("replayed copy keeps %s = %v; a replay starts over", h, v)
		}
	}
	want := map[string]any{
		runtime.HeaderOriginalRoutingKey: "item.added",
		runtime.HeaderOriginalExchange:   l.top.Exchanges[0].Name,
		poison.HeaderLastFailure:         "boom 2",
		poison.HeaderLastFailedAt:        "2024-05-01T10:00:05Z",
		poison.HeaderReplayCount:         int64(1),
		runtime.HeaderFactVersion:        int64(1),
	}
	for h, v := range want {
		if d.Headers[h] != v {
			t.Errorf("header %s = %#v, want %#v", h, d.Headers[h], v)
		}
	}
	if at, _ := d.Headers[poison.HeaderReplayedAt].(string); at == "" {
		t.Error("x-replayed-at missing")
	} else if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Errorf("x-replayed-at %q: %v", at, err)
	}
	if l.depth(l.a.PoisonQueue) != 2 {
		t.Errorf("poison depth %d after replaying one of three, want 2", l.depth(l.a.PoisonQueue))
	}

	// By routing key, then everything left; the other consumer bound to
	// the same keys never sees a replay.
	if done, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{RoutingKey: "item.removed"}); err != nil || !slices.Equal(ids(done), []string{"m3"}) {
		t.Fatalf("Replay(item.removed) = %v, %v; want [m3]", ids(done), err)
	}
	if done, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{}); err != nil || !slices.Equal(ids(done), []string{"m1"}) {
		t.Fatalf("Replay(all) = %v, %v; want [m1]", ids(done), err)
	}
	if n := l.depth(l.a.PoisonQueue); n != 0 {
		t.Errorf("poison depth %d, want 0", n)
	}
	if n := l.depth(l.a.Queue); n != 2 {
		t.Errorf("work queue depth %d, want 2", n)
	}
	if n := l.depth(l.b.Queue); n != 0 {
		t.Errorf("consumer b received %d replayed messages, want none", n)
	}
}

func TestReplayCountsUp(t *testing.T) {
	l := newLane(t)
	l.poisonCopy(l.a, "m1", "item.added", "boom", 2)
	ctx := context.Background()
	if _, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{}); err != nil {
		t.Fatal(err)
	}
	// The consumer fails again: the runtime copies it to poison with its
	// headers, replay count included.
	d := l.take(l.a.Queue)[0]
	h := d.Headers
	h[runtime.HeaderFailure] = "boom again"
	l.publish(l.a.DeadExchange, l.a.Name, amqp.Publishing{MessageId: d.MessageId, Body: d.Body, Headers: h})

	got, err := poison.List(ctx, l.conn, l.a, poison.Filter{})
	if err != nil || len(got) != 1 || got[0].Replays != 1 || got[0].Failure != "boom again" {
		t.Fatalf("List = %+v, %v; want one message replayed once", got, err)
	}
	if _, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{}); err != nil {
		t.Fatal(err)
	}
	if n := l.take(l.a.Queue)[0].Headers[poison.HeaderReplayCount]; n != int64(2) {
		t.Errorf("x-replay-count = %#v after the second replay, want 2", n)
	}
}

// A message the broker dead-lettered itself (here: rejected; in production
// over the delivery limit) carries no runtime headers. Its routing key is
// in x-death, and the replayed copy must carry it, or the consumer would
// see its own queue name as the routing key.
func TestReplayOfBrokerDeadLetteredMessage(t *testing.T) {
	l := newLane(t)
	l.publish(l.top.Exchanges[0].Name, "item.added", amqp.Publishing{MessageId: "m1", Body: []byte(`{"id":"m1"}`)})
	ch := l.channel()
	var d amqp.Delivery
	testenv.Eventually(t, "the message in the work queue", func() bool {
		var ok bool
		var err error
		if d, ok, err = ch.Get(l.a.Queue, false); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if err := d.Reject(false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var got []poison.Message
	testenv.Eventually(t, "the dead-lettered message in the poison queue", func() bool {
		var err error
		if got, err = poison.List(ctx, l.conn, l.a, poison.Filter{}); err != nil {
			t.Fatal(err)
		}
		return len(got) > 0
	})
	m := got[0]
	if m.ID != "m1" || m.RoutingKey != "item.added" || m.Exchange != l.top.Exchanges[0].Name || m.Attempts != 0 || m.FailedAt.IsZero() {
		t.Errorf("listed %+v", m)
	}
	if want := fmt.Sprintf("the broker dead-lettered it from queue %q: a consumer rejected it without requeueing", l.a.Queue); m.Failure != want {
		t.Errorf("failure %q, want %q", m.Failure, want)
	}
	if _, err := poison.Replay(ctx, l.conn, l.a, poison.Filter{}); err != nil {
		t.Fatal(err)
	}
	r := l.take(l.a.Queue)
	if len(r) != 1 || r[0].Headers[runtime.HeaderOriginalRoutingKey] != "item.added" || r[0].Headers[runtime.HeaderOriginalExchange] != l.top.Exchanges[0].Name {
		t.Fatalf("replayed copies %v; want one with the original routing key and exchange", r)
	}
}

func TestMissingQueues(t *testing.T) {
	conn := dial(t)
	name := testenv.Name("never-declared")
	c := topology.Consumer{Name: name, Queue: name, PoisonQueue: name + ".poison"}
	ctx := context.Background()
	if _, err := poison.List(ctx, conn, c, poison.Filter{}); !errors.Is(err, poison.ErrNoQueue) {
		t.Errorf("List on a missing queue: %v, want ErrNoQueue", err)
	}
	if _, err := poison.Replay(ctx, conn, c, poison.Filter{}); !errors.Is(err, poison.ErrNoQueue) {
		t.Errorf("Replay to a missing queue: %v, want ErrNoQueue", err)
	}
}
