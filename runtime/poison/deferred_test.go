package poison_test

import (
	"context"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// Replayed from the unroutable lane through the events exchange, a delayed
// fact goes to every consumer bound to its key, and a fact one consumer
// deferred (its work queue was gone when it fell due) to that consumer's
// work queue alone.
func TestReplayFromTheLaneSendsADeferralToItsQueueAlone(t *testing.T) {
	conn := dial(t)
	events := testenv.Name("events")
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: events, Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Delays:    true,
		Consumers: []topology.ConsumerSpec{
			{Name: testenv.Name("a"), Bindings: []string{"item.*"}, MaxAttempts: 1},
			{Name: testenv.Name("b"), Bindings: []string{"item.*"}, MaxAttempts: 1},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &lane{t: t, conn: conn, top: top, a: top.Consumers[0], b: top.Consumers[1]}
	t.Cleanup(l.cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Declare(ctx, top); err != nil {
		t.Fatal(err)
	}
	deferred, _ := topology.DeferredRoutingKey(time.Millisecond, l.a.Queue)
	delayed, _ := topology.DelayedRoutingKey(time.Millisecond, "item.added")
	for id, key := range map[string]string{"deferred": deferred, "delayed": delayed} {
		h := amqp.Table{runtime.HeaderOriginalRoutingKey: "item.added", runtime.HeaderOriginalExchange: events}
		if id == "deferred" {
			h[runtime.HeaderDeferrals] = int64(1)
		}
		l.publish(top.Delay.Unroutable, key, amqp.Publishing{MessageId: id, Headers: h, Body: []byte(`{}`)})
	}
	lane := topology.Consumer{Name: "the delay levels", PoisonQueue: top.Delay.Unroutable}
	done, err := poison.ReplayWith(ctx, conn, lane, poison.Filter{}, poison.ReplayOptions{Exchange: events})
	if err != nil || len(done) != 2 {
		t.Fatalf("replayed %v: %v; want both", ids(done), err)
	}
	var inA, inB []string
	for _, d := range l.take(l.a.Queue) {
		inA = append(inA, d.MessageId)
	}
	for _, d := range l.take(l.b.Queue) {
		inB = append(inB, d.MessageId)
	}
	if !slices.Equal(sorted(inA), []string{"deferred", "delayed"}) || !slices.Equal(inB, []string{"delayed"}) {
		t.Errorf("a's queue holds %v, b's %v; want a deferred and delayed, b delayed alone", inA, inB)
	}
}
