package runtime

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

func TestPublishAndConsume(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "smoke", Bindings: []string{"item.*"}, Backoff: testLadder})
	conn := b.dial(Config{})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	f := itemFact("item.added")
	var got atomic.Int32
	var last atomic.Value
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		got.Add(1)
		last.Store(d)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	id := mustPublish(t, pub, f, item{SKU: "a", N: 1})
	testenv.Eventually(t, "the fact handled", func() bool { return got.Load() == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	d := last.Load().(Delivery)
	if d.MessageID != id || d.Attempt != 1 || d.RoutingKey != "item.added" || d.Consumer != b.consumer(0).Name {
		t.Errorf("delivery %+v", d)
	}
}
