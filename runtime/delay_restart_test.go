package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// The broker is restarted (stop_app, start_app on the test's own node)
// while delayed facts wait in the delay levels, some of them due while it
// is down: every fact the broker confirmed reaches the consumer once it is
// back, with its due time, and none arrives before it was due.
func TestDisruptiveBrokerRestartWhileDelayedFactsWait(t *testing.T) {
	testenv.Disruptive(t)
	node := startRabbitNode(t)
	spec := topology.Spec{Delays: true, Exchanges: topology.Exchanges{
		Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead"),
	}, Consumers: []topology.ConsumerSpec{{Name: testenv.Name("later"), Bindings: []string{"item.#"}, Backoff: testLadder}}}
	b := newBrokerFrom(t, node.url(), spec)
	conn := b.dial(Config{})
	f := itemFact("item.added")

	var mu sync.Mutex
	arrived := map[string]int{}
	early := 0
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(_ context.Context, d Delivery, _ item) error {
		mu.Lock()
		defer mu.Unlock()
		arrived[d.MessageID]++
		if d.DueAt.IsZero() || time.Now().Before(d.DueAt) {
			early++
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const total = 300
	// Delays of 1 to 7 s, with every bit pattern of the low levels: the
	// restart below takes several seconds, so some fall due while the
	// node is down and the rest after.
	want := map[string]bool{}
	for i := range total {
		d := time.Second + time.Duration(i*20)*time.Millisecond + time.Duration(i%7)*time.Millisecond
		id, err := pub.In(d).Publish(ctx, f, item{SKU: fmt.Sprintf("s-%d", i), N: i})
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		want[id] = true
	}
	node.ctl("stop_app")
	time.Sleep(2 * time.Second) // facts fall due while the node is down
	node.ctl("start_app")

	testenv.Eventually(t, fmt.Sprintf("all %d delayed facts to arrive", total), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived) >= total
	})
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for id, n := range arrived {
		if !want[id] {
			t.Errorf("message %s arrived, never published here", id)
		}
		dups += n - 1
	}
	t.Logf("broker restart with %d delayed facts waiting: %d arrived, %d redelivered (at least once), %d early", total, len(arrived), dups, early)
	if early > 0 {
		t.Errorf("%d facts arrived before their due time or without it", early)
	}
	// The test's raw connection did not survive the restart: ask anew.
	raw, err := amqp.Dial(node.url())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if q, err := ch.QueueDeclarePassive(topology.UnroutableQueue(b.events()), true, false, false, false, nil); err != nil || q.Messages != 0 {
		t.Errorf("unroutable lane: %d facts, %v", q.Messages, err)
	}
}
