package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
	"github.com/warrenbus/warren/runtime/topology"
)

// TestKilledRelaysRepublishIsNoStepBack: a relay dies after the broker
// confirmed a batch holding three facts of one ordering key and before it
// deleted their rows; the next relay publishes the three again, with
// their ids and numbers. An ordered consumer handles them again (no guard
// here), and its sequence check counts neither a step back nor a gap: the
// facts are the same facts again, as RUNTIME.md says. A fact written
// afterwards continues the sequence.
func TestKilledRelaysRepublishIsNoStepBack(t *testing.T) {
	s := newSQLiteStore(t)
	ctx := context.Background()
	url := testenv.AMQPURL(t)
	top, err := topology.Build(topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("outbox-ordered"), Bindings: []string{"order.placed"}, Ordered: true, Shards: 1,
			Concurrency: 1, MaxAttempts: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	consumer := top.Consumers[0]
	t.Cleanup(func() {
		_ = conn.Close()
		raw, err := amqp.Dial(url)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer raw.Close()
		ch, err := raw.Channel()
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		for _, q := range append(top.Queues, topology.Queue{Name: runtime.MembersQueue(consumer.Name)}) {
			if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
				t.Errorf("cleanup: delete queue %s: %v", q.Name, err)
				return
			}
		}
		for _, e := range top.Exchanges {
			if err := ch.ExchangeDelete(e.Name, false, false); err != nil {
				t.Errorf("cleanup: delete exchange %s: %v", e.Name, err)
				return
			}
		}
	})
	pub, err := runtime.NewPublisher(conn, top.Exchanges[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	f := runtime.Fact{RoutingKey: "order.placed", Version: 1, OrderingKey: "/id"}
	cfg := outbox.RelayConfig{Facts: []runtime.Fact{f}}

	var mu sync.Mutex
	var handled []string
	c, err := runtime.NewConsumer(conn, consumer, []runtime.Route{
		runtime.Handle(f, func(_ context.Context, d runtime.Delivery, o order) error {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, fmt.Sprintf("%d#%v", o.Total, d.Headers[runtime.HeaderSequence]))
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-stopped; err != nil {
			t.Errorf("consumer: %v", err)
		}
	})
	wait := func(n int) string {
		t.Helper()
		var got string
		testenv.Eventually(t, fmt.Sprintf("%d facts handled", n), func() bool {
			mu.Lock()
			defer mu.Unlock()
			got = strings.Join(handled, " ")
			return len(handled) >= n
		})
		return got
	}

	s.write(f, order{ID: "k", Total: 1}, order{ID: "k", Total: 2}, order{ID: "k", Total: 3})
	dying := &crashingDB{DB: s.txDB}
	if n, err := s.relayOn(dying, pub, cfg).RelayOnce(ctx); n != 0 || err == nil || dying.crashes.Load() != 1 {
		t.Fatalf("dying relay: RelayOnce = %d, %v; want its commit to fail", n, err)
	}
	wait(3)
	if n, err := s.relay(pub, cfg).RelayOnce(ctx); n != 3 || err != nil {
		t.Fatalf("next relay: RelayOnce = %d, %v; want the three published again", n, err)
	}
	wait(6)
	s.write(f, order{ID: "k", Total: 4})
	if n, err := s.relay(pub, cfg).RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("RelayOnce = %d, %v; want the fourth fact", n, err)
	}
	if got, want := wait(7), "1#1 2#2 3#3 1#1 2#2 3#3 4#4"; got != want {
		t.Errorf("handled %s; want %s", got, want)
	}
	testenv.Eventually(t, "the last fact acked", func() bool { return conn.Counts(consumer.Name).Get(runtime.Acked) == 7 })
	counts := conn.Counts(consumer.Name)
	if g, b := counts.Get(runtime.SequenceGap), counts.Get(runtime.SequenceStepBack); g != 0 || b != 0 {
		t.Errorf("counted %d gaps and %d steps back; want none: the republished facts are the same facts again", g, b)
	}
}
