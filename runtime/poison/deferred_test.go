package poison_test

import (
	"context"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// Replayed from the unroutable lane through the events exchange, a delayed
// fact goes to every consumer bound to its key, and a fact one consumer
// deferred (its work queue was gone when it fell due) to that consumer's
// work queue alone.
func TestReplayFromTheLaneSendsADeferralToItsQueueAlone(t *testing.T) {
	l := newLaneOf(t, true)
	conn, top, events := l.conn, l.top, l.top.Exchanges[0].Name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deferred, _ := topology.DeferredRoutingKey(l.a.Queue)
	delayed, _ := topology.DelayedRoutingKey("item.added")
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
