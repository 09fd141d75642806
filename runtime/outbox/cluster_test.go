package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/outbox"
)

// Tests on a three-node cluster (make test-cluster), as in
// runtime/cluster_test.go.

// Facts scheduled in the outbox a few seconds ahead wait in PostgreSQL
// while the node the relay publishes through, which also leads the work
// queue, crashes. The relay publishes each through another node when it is
// due: every fact reaches the consumer (at least once, duplicates
// counted), and the table is empty afterwards.
func TestClusterScheduledFactsSurviveANodeLoss(t *testing.T) {
	const total = 200
	const shortest, spread = 4 * time.Second, 4 * time.Second
	c := testenv.NewCluster(t)
	keep, victim := c.Nodes[0].Name, c.Nodes[1].Name
	// The relay's connection is on the victim, which declares the topology
	// and so leads the work queue (quorum queues are led by the declaring
	// node, unless the broker is told otherwise).
	b := newBrokerAt(t, c.Node(t, keep).URL, c.URLsFrom(victim), true)
	testenv.Eventually(t, "the work queue replicated on every node", func() bool {
		return len(c.Queue(t, b.queue, "").Online) == len(c.Nodes)
	})
	leader := c.Queue(t, b.queue, "").Leader
	s := newPgxStore(t)
	runRelay(t, s.relay(b.pub, outbox.RelayConfig{}))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: c.URLsFrom(keep), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	var mu sync.Mutex
	got := map[string]int{}
	received := func() (distinct, dups int) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range got {
			dups += k - 1
		}
		return len(got), dups
	}
	consumer, err := runtime.NewConsumer(conn, b.top.Consumers[0], []runtime.Route{
		runtime.Handle(factPlaced, func(_ context.Context, d runtime.Delivery, _ order) error {
			mu.Lock()
			defer mu.Unlock()
			got[d.MessageID]++
			return nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runRelay(t, consumer)

	ids := make([]string, total)
	for n := range total {
		// Shuffled: facts due close together are written apart.
		d := shortest + time.Duration((n*7)%total)*spread/total
		ids[n] = s.writeVia(s.ob.In(d), factPlaced, order{ID: fmt.Sprintf("o-%d", n), Total: n})
	}
	if n, _ := received(); n > total/2 {
		t.Fatalf("%d of %d facts arrived before the node loss; it would prove little", n, total)
	}
	c.Kill(t, victim)
	waiting, _ := received()
	t.Logf("%s, the relay's node (the work queue's leader: %s), killed with %d of %d facts waiting", victim, leader, total-waiting, total)

	testenv.Eventually(t, fmt.Sprintf("all %d scheduled facts received", total), func() bool {
		n, _ := received()
		return n >= total
	})
	_, dups := received()
	mu.Lock()
	for _, id := range ids {
		if got[id] == 0 {
			t.Errorf("fact %s never arrived", id)
		}
	}
	mu.Unlock()
	t.Logf("received %d facts, %d duplicates, lost 0", total, dups)
	testenv.Eventually(t, "an empty outbox table", func() bool { return len(s.rows()) == 0 })
}
