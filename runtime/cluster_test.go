package runtime

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// Tests on a three-node cluster (make test-cluster): quorum queues
// replicated on every node, Dial given every node's address, and nodes
// stopped, killed and started again while facts flow.

// newClusterBroker declares the test topology on the cluster and returns
// it with the cluster. When the test ends, stopped nodes are started again
// before the topology is deleted.
func newClusterBroker(t *testing.T, specs ...topology.ConsumerSpec) (*broker, *testenv.Cluster) {
	t.Helper()
	c := testenv.NewCluster(t)
	b := newBrokerAt(t, c.Nodes[0].URL, specs...)
	t.Cleanup(func() { c.StartStopped(t) }) // runs before b's cleanup
	testenv.Eventually(t, "every queue replicated on every node", func() bool {
		return replicatedOn(t, b, c, "")
	})
	return b, c
}

// replicatedOn tells whether every queue of b's topology has a replica
// online on node, or on every node for "".
func replicatedOn(t *testing.T, b *broker, c *testenv.Cluster, node string) bool {
	states := c.Queues(t, "")
	for _, q := range b.top.Queues {
		online := states[q.Name].Online
		if node == "" && len(online) != len(c.Nodes) || node != "" && !slices.Contains(online, node) {
			return false
		}
	}
	return true
}

// clusterFlow is the record of a stream of facts: when each was confirmed and
// handled, and what publishing returned.
type clusterFlow struct {
	mu        sync.Mutex
	confirmed map[int]time.Time
	failed    map[int]error
	handled   map[int]int
	handledAt []time.Time
}

func newClusterFlow() *clusterFlow {
	return &clusterFlow{confirmed: map[int]time.Time{}, failed: map[int]error{}, handled: map[int]int{}}
}

func (f *clusterFlow) handle(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handled[n]++
	f.handledAt = append(f.handledAt, time.Now())
}

func (f *clusterFlow) published(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.failed[n] = err
		return
	}
	f.confirmed[n] = time.Now()
}

// lost returns the confirmed facts never handled, and how many handlings
// were duplicates.
func (f *clusterFlow) lost() (lost []int, duplicates int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for n := range f.confirmed {
		if f.handled[n] == 0 {
			lost = append(lost, n)
		}
	}
	for _, k := range f.handled {
		duplicates += k - 1
	}
	slices.Sort(lost)
	return lost, duplicates
}

// counts returns how many facts were confirmed, failed and handled.
func (f *clusterFlow) counts() (confirmed, failed, handled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.confirmed), len(f.failed), len(f.handled)
}

// longestPause returns the longest time between two consecutive events in
// at that ends after since: how long the stream stood still around a node
// loss at since.
func longestPause(at []time.Time, since time.Time) time.Duration {
	sorted := slices.Clone(at)
	slices.SortFunc(sorted, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(sorted); i++ {
		if sorted[i].After(since) {
			longest = max(longest, sorted[i].Sub(sorted[i-1]))
		}
	}
	return longest
}

// confirmTimes returns the confirm times of f, for longestPause.
func (f *clusterFlow) confirmTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := make([]time.Time, 0, len(f.confirmed))
	for _, t := range f.confirmed {
		at = append(at, t)
	}
	return at
}

func (f *clusterFlow) handleTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.handledAt)
}

// consume runs a consumer of b's first consumer on conn that records into f.
func consume(t *testing.T, b *broker, conn *Conn, f *clusterFlow) {
	t.Helper()
	fact := itemFact("item.added")
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(fact, func(ctx context.Context, d Delivery, v item) error {
		f.handle(v.N)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
}

// publishAll publishes facts from..to-1 over pub from workers goroutines,
// recording each result in f; published counts the confirmed ones. Workers
// stop early once halt (if not nil) is set.
func publishAll(pub *Publisher, f *clusterFlow, from, to, workers int, pace time.Duration, published *atomic.Int32, halt *atomic.Bool) *sync.WaitGroup {
	return publishAllHeld(pub, f, from, to, workers, pace, published, halt, to, nil)
}

// publishAllHeld is publishAll with the facts from held on waiting for
// release to close: a test that stops a node once the flow has begun
// holds the rest back until the stop is made, so that it lands inside the
// flow however long the stop takes on a loaded machine (rabbitmqctl stop
// has taken longer than publishing thousands of facts).
func publishAllHeld(pub *Publisher, f *clusterFlow, from, to, workers int, pace time.Duration, published *atomic.Int32, halt *atomic.Bool, held int, release <-chan struct{}) *sync.WaitGroup {
	fact := itemFact("item.added")
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := from + w; n < to && (halt == nil || !halt.Load()); n += workers {
				if n >= held {
					<-release
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				_, err := pub.Publish(ctx, fact, item{SKU: "s", N: n})
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

// connectedTo returns the host:port of the node conn is connected to, or
// "" while it reconnects.
func connectedTo(conn *Conn) string {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.sess == nil {
		return ""
	}
	u, err := url.Parse(conn.sess.url)
	if err != nil {
		return ""
	}
	return u.Host
}

func hostOf(t *testing.T, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// While 10,000 facts are published and consumed, the node that leads the
// work queue (and that both connections use) is stopped. Every confirmed
// fact is handled at least once, and the publisher and the consumer go on
// through another node without a restart.
func TestClusterLeaderStopsWhileFactsFlow(t *testing.T) {
	const total, workers = 10000, 10
	b, c := newClusterBroker(t, topology.ConsumerSpec{Name: "leaderloss", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4, Prefetch: 50})
	spec := b.consumer(0)
	leader := c.Queue(t, spec.Queue, "").Leader
	rec := &logRecorder{}
	cfg := Config{URLs: c.URLsFrom(leader), Logger: slog.New(rec)}
	pubConn, subConn := b.dial(cfg), b.dial(cfg)
	leaderHost := hostOf(t, c.Node(t, leader).URL)
	if connectedTo(pubConn) != leaderHost || connectedTo(subConn) != leaderHost {
		t.Fatalf("connected to %s and %s, want both on the leader %s", connectedTo(pubConn), connectedTo(subConn), leaderHost)
	}

	f := newClusterFlow()
	consume(t, b, subConn, f)
	pub, _ := NewPublisher(pubConn, b.events())
	var published atomic.Int32
	stopMade := make(chan struct{})
	wg := publishAllHeld(pub, f, 0, total, workers, 2*time.Millisecond, &published, nil, 4000, stopMade)

	testenv.Eventually(t, "the flow to reach 3,000 facts", func() bool { return published.Load() >= 3000 })
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
	newLeader := c.Queue(t, spec.Queue, leader).Leader
	t.Logf("sent %d, confirmed %d, publish errors %d, handled %d, duplicates %d, lost 0; leader %s stopped, new leader %s",
		total, confirmed, failed, handled, dups, leader, newLeader)
	t.Logf("longest pause: publishing %s, handling %s", longestPause(f.confirmTimes(), stoppedAt).Round(time.Millisecond),
		longestPause(f.handleTimes(), stoppedAt).Round(time.Millisecond))
	if failed != 0 {
		t.Errorf("%d publishes failed; a node loss must not fail a publish that has time to wait: %v", failed, firstError(f))
	}
	if newLeader == leader || newLeader == "" {
		t.Errorf("the work queue is led by %q after %s stopped", newLeader, leader)
	}
	for name, conn := range map[string]*Conn{"publisher": pubConn, "consumer": subConn} {
		if host := connectedTo(conn); host == "" || host == leaderHost {
			t.Errorf("the %s's connection is on %q, want another node than the stopped %s", name, host, leaderHost)
		}
	}
	// Both go on: one more fact all the way through.
	mustPublish(t, pub, itemFact("item.added"), item{SKU: "after", N: total})
	testenv.Eventually(t, "a fact published after the stop handled", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.handled[total] > 0
	})
}

// waitHandled waits until every confirmed fact was handled, and fails the
// test naming the lost ones if that does not happen within
// testenv.DefaultWait.
func waitHandled(t *testing.T, f *clusterFlow) {
	t.Helper()
	deadline := time.Now().Add(testenv.DefaultWait)
	for {
		lost, _ := f.lost()
		if len(lost) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d confirmed facts never handled (lost), the first: %v", len(lost), lost[:min(len(lost), 10)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstError(f *clusterFlow) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, err := range f.failed {
		return err
	}
	return nil
}

// A node that neither connection uses and that does not lead the work
// queue is stopped while facts flow, and started again: every quorum queue
// of the topology has its replica there again, nothing is lost, and
// neither connection ever dropped.
func TestClusterNodeStopsAndReturns(t *testing.T) {
	const total, workers = 2000, 4
	b, c := newClusterBroker(t, topology.ConsumerSpec{Name: "returns", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4})
	spec := b.consumer(0)
	leader := c.Queue(t, spec.Queue, "").Leader
	rec := &logRecorder{}
	cfg := Config{URLs: c.URLsFrom(leader), Logger: slog.New(rec)}
	pubConn, subConn := b.dial(cfg), b.dial(cfg)
	var follower string
	for _, n := range c.Nodes {
		if n.Name != leader {
			follower = n.Name
		}
	}

	f := newClusterFlow()
	consume(t, b, subConn, f)
	pub, _ := NewPublisher(pubConn, b.events())
	var published atomic.Int32
	wg := publishAll(pub, f, 0, total, workers, 5*time.Millisecond, &published, nil)

	testenv.Eventually(t, "the flow to reach 300 facts", func() bool { return published.Load() >= 300 })
	c.Stop(t, follower)
	testenv.Eventually(t, "facts published while "+follower+" is down", func() bool { return published.Load() >= 900 })
	if q := c.Queue(t, spec.Queue, follower); slices.Contains(q.Online, follower) {
		t.Fatalf("%s still online for %s after it stopped: %+v", follower, spec.Queue, q)
	}
	c.Start(t, follower)
	wg.Wait()

	testenv.Eventually(t, "every queue to have its replica on "+follower+" again", func() bool {
		return replicatedOn(t, b, c, follower)
	})
	waitHandled(t, f)
	confirmed, failed, handled := f.counts()
	_, dups := f.lost()
	t.Logf("sent %d, confirmed %d, publish errors %d, handled %d, duplicates %d, lost 0; %s stopped and returned", total, confirmed, failed, handled, dups, follower)
	if failed != 0 {
		t.Errorf("%d publishes failed: %v", failed, firstError(f))
	}
	if lost := rec.values("broker connection lost; reconnecting", "url"); len(lost) != 0 {
		t.Errorf("warren noticed a node it does not use: connections lost %v", lost)
	}
}

// The node a publisher is connected to (not the work queue's leader)
// crashes while publishes are in flight on it. Each publish either returns
// nil, and then the fact is handled, or returns an error: none returns nil
// for a fact the cluster lost.
func TestClusterPublishInFlightWhenItsNodeDies(t *testing.T) {
	const workers = 20
	b, c := newClusterBroker(t, topology.ConsumerSpec{Name: "inflight", Bindings: []string{"item.#"}, Backoff: testLadder, Concurrency: 4, Prefetch: 50})
	spec := b.consumer(0)
	leader := c.Queue(t, spec.Queue, "").Leader
	var victim string
	for _, n := range c.Nodes {
		if n.Name != leader && victim == "" {
			victim = n.Name
		}
	}
	rec := &logRecorder{}
	pubConn := b.dial(Config{URLs: c.URLsFrom(victim), Logger: slog.New(rec)})
	subConn := b.dial(Config{URLs: c.URLsFrom(leader)})
	if host := connectedTo(pubConn); host != hostOf(t, c.Node(t, victim).URL) {
		t.Fatalf("the publisher is on %s, want %s", host, victim)
	}

	f := newClusterFlow()
	consume(t, b, subConn, f)
	pub, _ := NewPublisher(pubConn, b.events())
	var published atomic.Int32
	var halt atomic.Bool
	wg := publishAll(pub, f, 0, 1<<30, workers, 0, &published, &halt)
	testenv.Eventually(t, "publishes in flight", func() bool { return published.Load() >= 1000 })
	killedAt := time.Now()
	c.Kill(t, victim)
	// Go on until a thousand more went through another node.
	after := published.Load() + 1000
	testenv.Eventually(t, "publishing to go on through another node", func() bool { return published.Load() >= after })
	halt.Store(true)
	wg.Wait()

	waitHandled(t, f)
	confirmed, failed, handled := f.counts()
	_, dups := f.lost()
	t.Logf("sent %d, confirmed %d, publish errors %d, handled %d, duplicates %d, lost 0; %s killed under the publisher", confirmed+failed, confirmed, failed, handled, dups, victim)
	t.Logf("longest pause: publishing %s, handling %s", longestPause(f.confirmTimes(), killedAt).Round(time.Millisecond),
		longestPause(f.handleTimes(), killedAt).Round(time.Millisecond))
	if failed > 0 {
		t.Logf("first publish error (allowed: the caller knows): %v", firstError(f))
	}
	if lost := rec.values("broker connection lost; reconnecting", "url"); len(lost) == 0 {
		t.Error("the publisher's connection never dropped: the crash missed it")
	}
	if host := connectedTo(pubConn); host == "" || host == hostOf(t, c.Node(t, victim).URL) {
		t.Errorf("the publisher is on %q after %s died", host, victim)
	}
}
