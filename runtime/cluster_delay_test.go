package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// While a few hundred delayed facts wait in the delay levels, the node
// that leads the level holding most of them crashes, and comes back only
// once the test is over. Every fact the broker confirmed reaches the
// consumer: the levels' quorum queues elect another leader, and their
// at-least-once dead-lettering loses nothing on the way down. Neither
// connection is on the lost node, so what is tested is the facts waiting
// in the levels, not failing over.
func TestClusterDelayedFactsSurviveANodeLoss(t *testing.T) {
	const total, workers = 300, 10
	// Delays of 5 to 10 seconds: 5,000 to 8,191 ms start in level 12
	// (4,096 ms), the longer ones in level 13.
	const shortest, spread = 5 * time.Second, 5 * time.Second
	c := testenv.NewCluster(t)
	b := newBrokerFrom(t, c.Nodes[0].URL, topology.Spec{
		Delays:    true,
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("later"), Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4, Prefetch: 50}},
	})
	t.Cleanup(func() { c.StartStopped(t) }) // runs before b's cleanup
	testenv.Eventually(t, "every queue replicated on every node", func() bool {
		return replicatedOn(t, b, c, "")
	})
	level := topology.DelayExchange(b.events(), 12)
	victim := c.Queue(t, level, "").Leader
	var other string
	for _, n := range c.Nodes {
		if n.Name != victim {
			other = n.Name
		}
	}
	cfg := Config{URLs: c.URLsFrom(other)}
	pubConn, subConn := b.dial(cfg), b.dial(cfg)

	f := newClusterFlow()
	consume(t, b, subConn, f)
	pub, _ := NewPublisher(pubConn, b.events())
	fact := itemFact("item.added")
	var wg sync.WaitGroup
	var next atomic.Int32
	for range workers {
		wg.Go(func() {
			for n := int(next.Add(1)) - 1; n < total; n = int(next.Add(1)) - 1 {
				// Shuffled: facts due close together are published apart.
				d := shortest + time.Duration((n*7)%total)*spread/total
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				_, err := pub.In(d).Publish(ctx, fact, item{SKU: "s", N: n})
				cancel()
				f.published(n, err)
			}
		})
	}
	wg.Wait()
	if _, failed, _ := f.counts(); failed != 0 {
		t.Fatalf("%d delayed publishes failed before any node was lost: %v", failed, firstError(f))
	}
	_, _, handled := f.counts()
	if handled > total/2 {
		t.Fatalf("%d of %d facts were handled before the node loss; it would prove little", handled, total)
	}
	c.Kill(t, victim)
	t.Logf("%s, leader of %s, killed with %d of %d facts waiting", victim, level, total-handled, total)
	testenv.Eventually(t, level+" led by another node", func() bool {
		q := c.Queue(t, level, victim)
		return q.Leader != victim && q.Leader != ""
	})

	waitHandled(t, f)
	confirmed, _, handled := f.counts()
	_, dups := f.lost()
	t.Logf("confirmed %d, handled %d, duplicates %d, lost 0", confirmed, handled, dups)
	if confirmed != total {
		t.Errorf("%d of %d delayed publishes confirmed", confirmed, total)
	}
}
