package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Streams on the three-node cluster (make test-cluster): a stream and a
// super stream's partitions replicated on every node, and the node that
// leads them stopped while facts are published and read.

// newClusterStreamBroker declares spec (a stream or super stream and its
// consumers) on the cluster, and waits until the streams of the topology
// have a replica online on every node.
func newClusterStreamBroker(t *testing.T, spec topology.Spec) (*broker, *testenv.Cluster, []string) {
	t.Helper()
	c := testenv.NewCluster(t)
	b := newBrokerFrom(t, c.Nodes[0].URL, spec)
	t.Cleanup(func() { c.StartStopped(t) }) // runs before b's cleanup
	var streams []string
	for _, ss := range b.top.SuperStreams() {
		streams = append(streams, ss.Partitions...)
	}
	if len(streams) == 0 {
		streams = []string{spec.Streams[0].Name}
	}
	testenv.Eventually(t, "every stream replicated on every node", func() bool {
		states := c.Queues(t, "")
		for _, s := range streams {
			if len(states[s].Online) != len(c.Nodes) {
				return false
			}
		}
		return true
	})
	return b, c, streams
}

// clusterConfig is a Config that connects to node first and knows every
// node's AMQP and stream address.
func clusterConfig(c *testenv.Cluster, node string, logger *slog.Logger) Config {
	return Config{URLs: c.URLsFrom(node), StreamPorts: c.StreamPortsFrom(node), Logger: logger}
}

// publishKeysHeld publishes facts from..to-1 over pub, fact n with the key
// k(n mod keys), one worker per key so that each key's facts are published
// in order, recording each result in f. The facts from held on wait until
// release closes.
func publishKeysHeld(pub *Publisher, fact Fact, f *clusterFlow, from, to, keys int, pace time.Duration, published *atomic.Int32, held int, release <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for n := from + k; n < to; n += keys {
				if n >= held {
					<-release
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				_, err := pub.Publish(ctx, fact, item{SKU: fmt.Sprintf("k%02d", k), N: n})
				cancel()
				f.published(n, err)
				if err == nil {
					published.Add(1)
				}
				time.Sleep(pace)
			}
		})
	}
	return &wg
}

// While 3,000 facts are published into a stream and read by a stream
// consumer, the node that leads the stream, and that the publisher's and
// the consumer's connections (AMQP and stream protocol) use, is stopped.
// Every confirmed fact is handled, the consumer reading on through another
// node from its stored offset; re-read facts are counted as duplicates.
// The facts are published through the events exchange, and, on a stream
// declared with publish "direct", written into the stream over the stream
// protocol, whose writer follows the stream's leader to another node.
func TestClusterStreamConsumerLeaderStops(t *testing.T) {
	t.Run("exchange", func(t *testing.T) { clusterStreamLeaderStops(t, false) })
	t.Run("direct", func(t *testing.T) { clusterStreamLeaderStops(t, true) })
}

func clusterStreamLeaderStops(t *testing.T, direct bool) {
	const total, keys = 3000, 6
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("items-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: direct}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("reader"), Bindings: []string{"item.#"}, Backoff: testLadder,
			Concurrency: 4, Prefetch: 100, Start: topology.Start{Kind: topology.StartFirst}}},
	}
	spec.Consumers[0].Stream = spec.Streams[0].Name
	b, c, streams := newClusterStreamBroker(t, spec)
	leader := c.Queue(t, streams[0], "").Leader
	rec := &logRecorder{}
	cfg := clusterConfig(c, leader, slog.New(rec))
	pubConn, subConn := b.dial(cfg), b.dial(cfg)
	leaderHost := hostOf(t, c.Node(t, leader).URL)

	f := newClusterFlow()
	fact := itemFact("item.added")
	// A fact handled again at an offset already handled was read again; at
	// another offset, it was published twice (its publish sent again after
	// the lost connection, confirmed once).
	var offMu sync.Mutex
	offsets := map[any]bool{}
	reread := 0
	cons, err := NewConsumer(subConn, b.consumer(0), []Route{Handle(fact, func(ctx context.Context, d Delivery, v item) error {
		offMu.Lock()
		off := d.Headers["x-stream-offset"]
		if offsets[off] {
			reread++
		}
		offsets[off] = true
		offMu.Unlock()
		f.handle(v.N)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, cons)
	pub, _ := NewPublisher(pubConn, b.events())
	var published atomic.Int32
	// The facts past 1,600 wait for the stop to be made (see
	// TestClusterStreamGroupNodeStops).
	stopMade := make(chan struct{})
	wg := publishKeysHeld(pub, fact, f, 0, total, keys, 5*time.Millisecond, &published, 1600, stopMade)

	testenv.Eventually(t, "the flow to reach 800 facts", func() bool { return published.Load() >= 800 })
	stoppedAt := time.Now()
	c.Stop(t, leader)
	close(stopMade)
	if p := published.Load(); p >= total {
		t.Fatalf("the stop came after all %d facts were published; it proved nothing", p)
	}
	wg.Wait()
	waitHandled(t, f)

	confirmed, failed, handled := f.counts()
	_, dups := f.lost()
	newLeader := c.Queue(t, streams[0], leader).Leader
	offMu.Lock()
	t.Logf("sent %d, confirmed %d, publish errors %d, handled %d, duplicates %d (%d read again, the others published twice), lost 0; stream leader %s stopped, new leader %s",
		total, confirmed, failed, handled, dups, reread, leader, newLeader)
	if reread != 0 {
		t.Errorf("%d facts read again and handled twice: the facts in hand when the channel went must settle before the stream is read again", reread)
	}
	offMu.Unlock()
	t.Logf("longest pause: publishing %s, handling %s", longestPause(f.confirmTimes(), stoppedAt).Round(time.Millisecond),
		longestPause(f.handleTimes(), stoppedAt).Round(time.Millisecond))
	if failed != 0 {
		t.Errorf("%d publishes failed; a node loss must not fail a publish that has time to wait: %v", failed, firstError(f))
	}
	if s, _ := pub.direct.streams.Load(fact.RoutingKey); direct != (s == streams[0]) {
		t.Errorf("the publisher wrote into stream %q directly, want direct %v", s, direct)
	}
	for name, conn := range map[string]*Conn{"publisher": pubConn, "consumer": subConn} {
		if host := connectedTo(conn); host == "" || host == leaderHost {
			t.Errorf("the %s's connection is on %q, want another node than the stopped %s", name, host, leaderHost)
		}
	}
	// The offset is stored again, through another node.
	before := b.storedOffset(subConn, b.consumer(0))
	mustPublish(t, pub, fact, item{SKU: "after", N: total})
	testenv.Eventually(t, "a fact published after the stop handled", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.handled[total] > 0
	})
	testenv.Eventually(t, "the offset stored past it", func() bool { return b.storedOffset(subConn, b.consumer(0)) > before })
}

// A consumer group of two instances reads a super stream of 3 partitions
// while facts of 12 keys are published; the node both instances connect
// to, which leads the first partition, is stopped. Every confirmed fact is
// handled; a partition whose active member's connection was lost is read
// again from its stored offset (duplicates counted), so each key's facts
// are first handled in publish order.
func TestClusterStreamGroupNodeStops(t *testing.T) {
	const total, keys = 2400, 12
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 50, Start: topology.Start{Kind: topology.StartFirst}})
	b, c, partitions := newClusterStreamBroker(t, spec)
	victim := c.Queue(t, partitions[0], "").Leader
	fact := orderedFact()

	f := newClusterFlow()
	var mu sync.Mutex
	byKey := map[string][]int{}
	for range 2 {
		conn := b.dial(clusterConfig(c, victim, b.logs))
		cons, err := NewConsumer(conn, b.consumer(0), []Route{Handle(fact, func(ctx context.Context, d Delivery, v item) error {
			mu.Lock()
			byKey[v.SKU] = append(byKey[v.SKU], v.N)
			mu.Unlock()
			f.handle(v.N)
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		run(t, cons)
	}
	pub, err := NewPublisher(b.dial(clusterConfig(c, victim, b.logs)), b.events())
	if err != nil {
		t.Fatal(err)
	}
	var published atomic.Int32
	// The facts past 1,200 wait for the stop to be made, so that it lands
	// inside the flow however slow rabbitmqctl is on a loaded machine.
	stopMade := make(chan struct{})
	wg := publishKeysHeld(pub, fact, f, 0, total, keys, 5*time.Millisecond, &published, 1200, stopMade)

	testenv.Eventually(t, "the flow to reach 600 facts", func() bool { return published.Load() >= 600 })
	stoppedAt := time.Now()
	c.Stop(t, victim)
	close(stopMade)
	if p := published.Load(); p >= total {
		t.Fatalf("the stop came after all %d facts were published; it proved nothing", p)
	}
	wg.Wait()
	waitHandled(t, f)

	confirmed, failed, handled := f.counts()
	_, dups := f.lost()
	t.Logf("sent %d, confirmed %d, publish errors %d, handled %d, duplicates %d, lost 0; %s (leader of %s) stopped",
		total, confirmed, failed, handled, dups, victim, partitions[0])
	t.Logf("longest pause: publishing %s, handling %s", longestPause(f.confirmTimes(), stoppedAt).Round(time.Millisecond),
		longestPause(f.handleTimes(), stoppedAt).Round(time.Millisecond))
	if failed != 0 {
		t.Errorf("%d publishes failed: %v", failed, firstError(f))
	}
	mu.Lock()
	defer mu.Unlock()
	for key, ns := range byKey {
		seen := map[int]bool{}
		last := -1
		for _, n := range ns {
			if seen[n] {
				continue
			}
			seen[n] = true
			if n < last {
				t.Fatalf("key %s first handled %d after %d: %v", key, n, last, ns)
			}
			last = n
		}
	}
}

// A stream consumer given one node's URL of the cluster cannot read a
// replicated stream over the stream protocol (the client sends a reader
// to a replica, which that one address does not reach): it says so and
// reads the stream over AMQP through that node. It stops no node.
func TestClusterStreamConsumerWithOneNodeReadsOverAMQP(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("items-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("reader"), Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}}},
	}
	spec.Consumers[0].Stream = spec.Streams[0].Name
	b, c, _ := newClusterStreamBroker(t, spec)
	node := c.Nodes[1]
	rec := &logRecorder{}
	conn := b.dial(Config{URLs: []string{node.URL}, StreamPort: c.StreamPortsFrom(node.Name)[0], Logger: slog.New(rec)})
	pub, _ := NewPublisher(conn, b.events())
	fact := itemFact("item.added")
	for n := range 3 {
		mustPublish(t, pub, fact, item{SKU: "s", N: n})
	}
	readFacts(t, b, conn, fact, 3)
	if said := rec.values("reading the stream over AMQP: the stream protocol reaches one node, and the stream's replicas are on others; give every node's URL to read it over the stream protocol", "stream"); len(said) != 1 {
		t.Fatalf("the fallback to AMQP was logged %d times, want once", len(said))
	}
}

// A consumer group given one node's URL of the cluster cannot read its
// replicated partitions (a group reads only over the stream protocol):
// Run fails at once and says to give every node's URL, where it used to
// wait for good. It stops no node.
func TestClusterStreamGroupWithOneNodeFails(t *testing.T) {
	spec := superStreamSpec(2, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder})
	b, c, _ := newClusterStreamBroker(t, spec)
	node := c.Nodes[1]
	conn := b.dial(Config{URLs: []string{node.URL}, StreamPort: c.StreamPortsFrom(node.Name)[0]})
	cons, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(context.Context, Delivery, item) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = cons.Run(ctx)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "replicas on other nodes") || !strings.Contains(err.Error(), "give every node's address") {
		t.Fatalf("Run of a group with one node's URL: %v; want an error saying to give every node's address", err)
	}
}

// A direct stream's publisher given one node's URL of the cluster, a node
// that does not lead the stream, cannot write into it over the stream
// protocol (the client sends a writer to the leader, which that address
// does not reach): it says so and publishes through the exchange, which
// binds the facts to the stream too; each is confirmed and read. It used
// to wait until the publish's context ended. It stops no node.
func TestClusterDirectStreamWithOneNode(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("items-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
		Consumers: []topology.ConsumerSpec{{Name: testenv.Name("reader"), Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}}},
	}
	spec.Consumers[0].Stream = spec.Streams[0].Name
	b, c, streams := newClusterStreamBroker(t, spec)
	leader := c.Queue(t, streams[0], "").Leader
	var node testenv.ClusterNode
	for _, n := range c.Nodes {
		if n.Name != leader {
			node = n
			break
		}
	}
	rec := &logRecorder{}
	conn := b.dial(Config{URLs: []string{node.URL}, StreamPort: c.StreamPortsFrom(node.Name)[0], Logger: slog.New(rec)})
	pub, _ := NewPublisher(conn, b.events())
	fact := itemFact("item.added")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for n := range 3 {
		if _, err := pub.Publish(ctx, fact, item{SKU: "s", N: n}); err != nil {
			t.Fatalf("publish %d through %s (the stream's leader is %s): %v", n, node.Name, leader, err)
		}
	}
	if said := rec.values("publishing through the exchange: the stream protocol reaches one node, and the stream's leader and replicas are on several; give every node's URL to write into it directly", "stream"); len(said) != 1 {
		t.Fatalf("the publish through the exchange was logged %d times, want once", len(said))
	}
	readFacts(t, b, conn, fact, 3)
}

// readFacts runs b's first consumer on conn until it has handled want
// facts of fact, and stops it.
func readFacts(t *testing.T, b *broker, conn *Conn, fact Fact, want int) {
	t.Helper()
	cons, got := skuReader(t, b, conn, fact)
	stop := run(t, cons)
	testenv.Eventually(t, fmt.Sprintf("the %d facts read from the stream", want), func() bool { return len(got.list()) == want })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
