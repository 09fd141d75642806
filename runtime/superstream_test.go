package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/topology"
)

// superStreamSpec is a test-unique spec with a super stream of the
// "item.#" facts in partitions, and the given consumers of it.
func superStreamSpec(partitions int, specs ...topology.ConsumerSpec) topology.Spec {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("items-super"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Partitions: partitions}},
	}
	for _, s := range specs {
		s.Name = testenv.Name(s.Name)
		s.Stream = spec.Streams[0].Name
		spec.Consumers = append(spec.Consumers, s)
	}
	return spec
}

// newSuperStreamBroker declares spec on the test broker with its stream
// port. On a broker without super streams (before RabbitMQ 3.11) it checks
// that Declare refuses them, naming the version, and returns nil: the
// test has nothing more to run there (scripts/rabbitmq4 env points the
// tests at a RabbitMQ 4 node).
func newSuperStreamBroker(t *testing.T, spec topology.Spec) *broker {
	t.Helper()
	probe := newBroker(t)
	if v := (transport.Network{Connection: probe.raw}).ServerVersion(); !topology.SupportsSuperStreams(v) {
		top, err := topology.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		conn := probe.dial(Config{Topology: &topology.Topology{}})
		var ve *BrokerVersionError
		if err := conn.Declare(context.Background(), top); !errors.As(err, &ve) {
			t.Fatalf("Declare of a super stream on RabbitMQ %s: %v; want a *BrokerVersionError", v, err)
		}
		t.Logf("RabbitMQ %s has no super streams: Declare refused them; the consumer group runs on RabbitMQ 3.11 or later", v)
		return nil
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)
	return b
}

// Super streams are declared on RabbitMQ 3.11 and later; on an older
// broker Declare refuses them, naming the version, before declaring
// anything. Declared, the same topology declares again unchanged, and one
// with another partition count is refused, nothing of it declared.
func TestSuperStreamDeclare(t *testing.T) {
	probe := newBroker(t)
	version := transport.Network{Connection: probe.raw}.ServerVersion()
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder})
	top, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	conn := probe.dial(Config{Topology: &topology.Topology{}})
	if !topology.SupportsSuperStreams(version) {
		err := conn.Declare(context.Background(), top)
		var ve *BrokerVersionError
		if !errors.As(err, &ve) || ve.Version != version || ve.Min != "3.11" {
			t.Fatalf("Declare of a super stream on RabbitMQ %s: %v; want a *BrokerVersionError naming %s and 3.11", version, err, version)
		}
		t.Logf("refused: %v", err)
		// Dial with the topology fails at once: another try reaches the
		// same release.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = Dial(ctx, Config{URLs: []string{probe.url}, StreamPort: testenv.StreamPort(t), Topology: &top, Logger: probe.logs})
		if !errors.As(err, &ve) || ctx.Err() != nil {
			t.Fatalf("Dial with a super stream on RabbitMQ %s: %v (context: %v); want a *BrokerVersionError before the deadline", version, err, ctx.Err())
		}
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, top.Consumers[0].PoisonQueue); !errors.Is(err, amqpmsg.ErrNoQueue) {
			t.Errorf("after the refusal, inspecting %s: %v; want no such queue", top.Consumers[0].PoisonQueue, err)
		}
		return
	}
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	for _, p := range b.top.SuperStreams()[0].Partitions {
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, p); err != nil {
			t.Fatalf("partition %s: %v", p, err)
		}
	}
	if err := conn.Declare(context.Background(), b.top); err != nil {
		t.Fatalf("declaring the same super stream again: %v", err)
	}

	// Four partitions instead of three, with a consumer of its own.
	spec4 := spec
	spec4.Streams = []topology.StreamSpec{spec.Streams[0]}
	spec4.Streams[0].Partitions = 4
	spec4.Consumers = []topology.ConsumerSpec{{Name: testenv.Name("late"), Bindings: []string{"item.#"}, Stream: spec.Streams[0].Name, Backoff: testLadder}}
	top4, err := topology.Build(spec4)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Declare(context.Background(), top4)
	var pe *PartitionCountError
	if !errors.As(err, &pe) || pe.Have != 3 || pe.Want != 4 || pe.Stream != spec.Streams[0].Name {
		t.Fatalf("Declare with 4 partitions over 3: %v; want a *PartitionCountError 3 -> 4", err)
	}
	t.Logf("refused: %v", err)
	for _, q := range []string{top4.Consumers[0].PoisonQueue, topology.PartitionStream(spec.Streams[0].Name, 3)} {
		if _, err := amqpmsg.InspectQueue(context.Background(), conn, q); !errors.Is(err, amqpmsg.ErrNoQueue) {
			t.Errorf("after the refusal, inspecting %s: %v; want no such queue", q, err)
		}
	}
	// Fewer is refused as well.
	spec4.Streams[0].Partitions = 2
	top2, err := topology.Build(spec4)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Declare(context.Background(), top2); !errors.As(err, &pe) || pe.Have != 3 || pe.Want != 2 {
		t.Fatalf("Declare with 2 partitions over 3: %v; want a *PartitionCountError 3 -> 2", err)
	}
}

// Two instances of a consumer of a super stream of 3 partitions share its
// partitions, one active consumer per partition. One stops while facts of
// 20 keys are published: the other takes its partitions over, every fact
// is handled exactly once, and each key's facts in publish order.
func TestSuperStreamGroupTakeover(t *testing.T) {
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 50, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	f.RoutingKey = "item.added"

	h := newHandled()
	var mu sync.Mutex
	owner := map[string]string{}         // key -> instance that handled it last
	firstTaken := map[string]time.Time{} // instance -> first fact of a key another instance had
	start := func(name string) func() error {
		conn := b.dial(Config{})
		c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			return h.run(v, func() error {
				mu.Lock()
				if prev, ok := owner[v.SKU]; ok && prev != name {
					if _, seen := firstTaken[name]; !seen {
						firstTaken[name] = time.Now()
					}
				}
				owner[v.SKU] = name
				mu.Unlock()
				time.Sleep(time.Millisecond)
				return nil
			})
		})})
		if err != nil {
			t.Fatal(err)
		}
		return run(t, c)
	}
	stopA := start("a")
	start("b")

	const keys, perKey = 20, 30
	published := publishRounds(t, b, f, keys, perKey)
	testenv.Eventually(t, "a third of the facts handled", func() bool { return h.count() >= keys*perKey/3 })
	mu.Lock()
	a := 0
	for _, o := range owner {
		if o == "a" {
			a++
		}
	}
	mu.Unlock()
	if a == 0 {
		t.Fatalf("instance a handled none of the %d keys: the group did not share partitions", keys)
	}
	stopping := time.Now()
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	<-published
	testenv.Eventually(t, "every fact handled", func() bool { return h.count() >= keys*perKey })
	mu.Lock()
	taken := firstTaken["b"]
	mu.Unlock()
	if taken.IsZero() {
		t.Fatal("instance b never handled a key instance a had: no takeover")
	}
	t.Logf("instance a had %d of %d keys; stop took %s; b handled a's first key %s after the stop began", a, keys, stopped.Sub(stopping), taken.Sub(stopping))
	if n := h.count(); n != keys*perKey {
		t.Errorf("%d facts handled, want %d: each once", n, keys*perKey)
	}
	requireKeyOrder(t, h.byKey, perKey)
}

// A failure of a super stream consumer's handler goes to its own retry
// ladder and comes back through its work queue with the attempt counted;
// a fact that keeps failing ends in its poison queue; the partition reads
// on meanwhile.
func TestSuperStreamGroupRetriesAndPoisons(t *testing.T) {
	spec := superStreamSpec(2, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		MaxAttempts: 2, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	conn := b.dial(Config{})
	var mu sync.Mutex
	attempts := map[string][]int{}
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		mu.Lock()
		attempts[v.SKU] = append(attempts[v.SKU], d.Attempt)
		mu.Unlock()
		switch {
		case v.SKU == "bad":
			return errors.New("always fails")
		case v.SKU == "flaky" && d.Attempt == 1:
			return errors.New("fails once")
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	for _, s := range []string{"flaky", "bad", "ok"} {
		mustPublish(t, pub, f, item{SKU: s})
	}
	testenv.Eventually(t, "the failing fact in poison", func() bool { return b.depth(b.consumer(0).PoisonQueue) == 1 })
	testenv.Eventually(t, "the flaky fact handled again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts["flaky"]) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	for sku, want := range map[string][]int{"flaky": {1, 2}, "bad": {1, 2}, "ok": {1}} {
		if !slices.Equal(attempts[sku], want) {
			t.Errorf("attempts of %s: %v, want %v", sku, attempts[sku], want)
		}
	}
	d := b.get(b.consumer(0).PoisonQueue)
	if d.Headers[HeaderOriginalRoutingKey] != "item.added" || d.Headers["x-consumer"] != b.consumer(0).Name {
		t.Errorf("poison copy headers %v: want the original routing key and the consumer", d.Headers)
	}
}

// A group member, reading over the stream protocol, is given a fact's
// headers as a queue consumer is, on every release: RabbitMQ from 3.13 on
// keeps the AMQP 0-9-1 headers named x- (warren's own among them) as
// message annotations rather than application properties. A copy to the
// poison queue keeps them.
func TestSuperStreamGroupSeesTheFactsHeaders(t *testing.T) {
	spec := superStreamSpec(2, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		MaxAttempts: 1, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	conn := b.dial(Config{})
	seen := make(chan Delivery, 2)
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		seen <- d
		if v.SKU == "bad" {
			return errors.New("always fails")
		}
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	pub, err := NewPublisher(conn, b.events(), WithPublishMiddleware(func(next PublishFunc) PublishFunc {
		return func(ctx context.Context, m *Outgoing) error {
			m.Headers["x-trace"] = "trace-1"
			m.Headers["tenant"] = "acme"
			return next(ctx, m)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	mustPublish(t, pub, f, item{SKU: "good"})
	mustPublish(t, pub, f, item{SKU: "bad"})
	want := map[string]any{HeaderFactVersion: int64(f.Version), HeaderOrderingKey: "", "x-trace": "trace-1", "tenant": "acme"}
	check := func(what string, h map[string]any, sku string) {
		t.Helper()
		want[HeaderOrderingKey] = sku
		for k, v := range want {
			if fmt.Sprint(h[k]) != fmt.Sprint(v) {
				t.Errorf("%s: header %s = %v, want %v (headers %v)", what, k, h[k], v, h)
			}
		}
	}
	for range 2 {
		select {
		case d := <-seen:
			sku, _ := d.Headers[HeaderOrderingKey].(string)
			check("a group member's delivery", d.Headers, sku)
			// As a plain stream's reader is given it over AMQP.
			if _, ok := d.Headers["x-stream-offset"].(int64); !ok {
				t.Errorf("a group member's delivery has x-stream-offset %#v, want its offset", d.Headers["x-stream-offset"])
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the group did not handle both facts")
		}
	}
	testenv.Eventually(t, "the failing fact in poison", func() bool { return b.depth(b.consumer(0).PoisonQueue) == 1 })
	check("the poison copy", b.get(b.consumer(0).PoisonQueue).Headers, "bad")
}

// A second instance joining a running group takes partitions over from
// the first, which hands each one over only after its facts in hand are
// handled and their offset stored: every fact is handled once and each
// key's facts in publish order, with the handover in the middle.
func TestSuperStreamGroupRebalance(t *testing.T) {
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 50, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()

	h := newHandled()
	var mu sync.Mutex
	by := map[string]int{} // instance -> facts handled
	start := func(name string) {
		c, err := NewConsumer(b.dial(Config{}), b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			return h.run(v, func() error {
				mu.Lock()
				by[name]++
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // facts in hand when the handover comes
				return nil
			})
		})})
		if err != nil {
			t.Fatal(err)
		}
		run(t, c)
	}
	start("a")

	const keys, perKey = 20, 30
	published := publishRounds(t, b, f, keys, perKey)
	testenv.Eventually(t, "a fifth of the facts handled by the first instance", func() bool { return h.count() >= keys*perKey/5 })
	start("b")
	<-published
	testenv.Eventually(t, "every fact handled", func() bool { return h.count() >= keys*perKey })
	mu.Lock()
	t.Logf("handled: a %d, b %d", by["a"], by["b"])
	if by["b"] == 0 {
		t.Error("the joining instance handled nothing: no partition was handed over")
	}
	mu.Unlock()
	if n := h.count(); n != keys*perKey {
		t.Errorf("%d facts handled, want %d: each once", n, keys*perKey)
	}
	requireKeyOrder(t, h.byKey, perKey)
}

// An instance that dies (its connections close without its offsets
// stored, its handlers' work lost) loses its partitions to the other
// instance, which reads them again from the last stored offset: every
// fact is handled at least once and each key's facts, counting each
// once, in publish order. Nothing asserts how fast; the test logs it.
func TestSuperStreamGroupCrashTakeover(t *testing.T) {
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 50, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	var mu sync.Mutex
	seen := map[string][]int{} // key -> facts handled, first handling only
	dup := 0
	owner := map[string]string{}
	var crashed atomic.Bool
	var crashAt, takenAt time.Time
	start := func(name string) *Conn {
		conn := b.dial(Config{})
		c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
			time.Sleep(time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if name == "a" && crashed.Load() {
				return errors.New("the process is gone") // its work never happened
			}
			if prev, ok := owner[v.SKU]; ok && prev != name && takenAt.IsZero() && !crashAt.IsZero() {
				takenAt = time.Now()
			}
			owner[v.SKU] = name
			if slices.Contains(seen[v.SKU], v.N) {
				dup++
				return nil
			}
			seen[v.SKU] = append(seen[v.SKU], v.N)
			return nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() { _ = c.Run(ctx) }()
		return conn
	}
	connA := start("a")
	start("b")
	const keys, perKey = 20, 30
	published := publishRounds(t, b, f, keys, perKey)
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, ns := range seen {
			n += len(ns)
		}
		return n
	}
	testenv.Eventually(t, "a third of the facts handled", func() bool { return total() >= keys*perKey/3 })
	mu.Lock()
	crashAt = time.Now()
	mu.Unlock()
	crashed.Store(true)
	_ = connA.Close()
	<-published
	testenv.Eventually(t, "every fact handled", func() bool { return total() >= keys*perKey })
	mu.Lock()
	defer mu.Unlock()
	if takenAt.IsZero() {
		t.Fatal("instance b never handled a key instance a had: no takeover")
	}
	t.Logf("after the crash, b handled a key of a's %s later; %d facts handled again", takenAt.Sub(crashAt), dup)
	for k, ns := range seen {
		for i, n := range ns {
			if n != i {
				t.Fatalf("key %s first handled in the order %v, want 0..%d", k, ns, perKey-1)
			}
		}
	}
}

// publishRounds publishes perKey facts of each of keys ordering keys
// (k00, k01, ...; N counting up per key) in the background, a round of
// every key at a time with a pause between rounds, so that consumers
// join and leave while facts flow; the channel closes once all are
// confirmed.
func publishRounds(t *testing.T, b *broker, f Fact, keys, perKey int) <-chan struct{} {
	t.Helper()
	pub, err := NewPublisher(b.dial(Config{}), b.events())
	if err != nil {
		t.Fatal(err)
	}
	published := make(chan struct{})
	go func() {
		defer close(published)
		for n := range perKey {
			for k := range keys {
				mustPublish(t, pub, f, item{SKU: fmt.Sprintf("k%02d", k), N: n})
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return published
}

// A member's stream connection drops (cut by a proxy in front of the
// stream port) while a handler is in the middle of a fact. The member
// drops the facts of its lost subscriptions that no handler had started,
// lets the one in hand finish, and subscribes again from after it: every
// fact is handled once, each key in publish order, with no idempotency
// guard.
func TestSuperStreamGroupConnectionDrop(t *testing.T) {
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 50, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	const keys, perKey = 12, 40
	published := publishRounds(t, b, f, keys, perKey)
	<-published

	px := newProxy(t, fmt.Sprintf("tcp://127.0.0.1:%d", b.streamPort), nil)
	_, port, _ := net.SplitHostPort(px.ln.Addr().String())
	proxyPort, _ := strconv.Atoi(port)
	conn := b.dial(Config{StreamPort: proxyPort})
	var tally keyTally
	hit, release := make(chan string), make(chan struct{})
	var cut atomic.Bool
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if tally.n() == keys*perKey/3 && cut.CompareAndSwap(false, true) {
			hit <- fmt.Sprintf("%s#%d", v.SKU, v.N)
			<-release // the member's stream connection is cut meanwhile
		}
		tally.add(v)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	inHand := <-hit
	px.cut()
	// Give the client time to notice, connect again through the proxy and
	// subscribe again: a member that read on at once from the stored
	// offset would now have the facts of the new subscription waiting
	// beside those of the old.
	testenv.Eventually(t, "the member's stream connection open again", func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		return len(px.conns) > 0
	})
	time.Sleep(time.Second)
	t.Logf("stream connection cut while %s was in hand", inHand)
	release <- struct{}{}
	tally.requireEachOnceInOrder(t, stop, keys, perKey)
}

// A member stops while a re-subscription to its partitions is in flight:
// its stream connections were cut and new ones are refused (a proxy in
// front of the stream port), so the stream client keeps looking for a node
// that answers. The member's Run returns all the same; the client is closed
// only once that re-subscription has ended, when the port answers again.
// Closing it before made the client panic ("send on closed channel") when
// the consumer that re-subscription added closed later.
func TestSuperStreamGroupLeavesDuringAResubscription(t *testing.T) {
	// Mostly waiting: beside the package's other long tests.
	t.Parallel()
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	<-publishRounds(t, b, f, 6, 2)
	px := newProxy(t, fmt.Sprintf("tcp://127.0.0.1:%d", b.streamPort), nil)
	_, port, _ := net.SplitHostPort(px.ln.Addr().String())
	proxyPort, _ := strconv.Atoi(port)
	rec := &logRecorder{}
	conn := b.dial(Config{StreamPort: proxyPort, Logger: slog.New(rec)})
	var handled atomic.Int32
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		handled.Add(1)
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	testenv.Eventually(t, "the member active and reading", func() bool { return handled.Load() == 12 })

	px.setDown(true)
	testenv.Eventually(t, "a re-subscription in flight: the client trying to connect", func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		return px.refused > 0
	})
	stopped := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Run returned %s after it was stopped, with a re-subscription in flight", time.Since(stopped).Round(time.Millisecond))

	// The port answers again: the re-subscription in flight ends, adding a
	// partition consumer, and the member's client closes after it. Then
	// the connections are cut: the consumer it added, had the client
	// closed before, would close now and have the client send its close
	// event on a channel closed long before.
	px.setDown(false)
	testenv.Eventually(t, "the stream client connected again", func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		return len(px.conns) > 0
	})
	time.Sleep(3 * time.Second) // past the 2 s after which the client closes that channel
	px.cut()
	time.Sleep(time.Second) // a panic in the client's goroutine would end the test binary here
}

// requireKeyOrder fails t unless each key's facts were handled in the
// order they were published, 0, 1, 2..., each once.
func requireKeyOrder(t *testing.T, byKey map[string][]int, perKey int) {
	t.Helper()
	for k, ns := range byKey {
		for i, n := range ns {
			if n != i {
				t.Fatalf("key %s handled in the order %v, want 0..%d, each once", k, ns, perKey-1)
			}
		}
	}
}

// keyTally records the facts a consumer handled, each key's numbers in the
// order handled.
type keyTally struct {
	mu      sync.Mutex
	handled map[string][]int
	count   int
}

func (k *keyTally) add(v item) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.handled == nil {
		k.handled = map[string][]int{}
	}
	k.handled[v.SKU] = append(k.handled[v.SKU], v.N)
	k.count++
}

func (k *keyTally) n() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.count
}

// requireEachOnceInOrder waits until keys*perKey facts were handled, stops
// the consumer, and requires that each was handled once, each key's in
// publish order.
func (k *keyTally) requireEachOnceInOrder(t *testing.T, stop func() error, keys, perKey int) {
	t.Helper()
	testenv.Eventually(t, "every fact handled", func() bool { return k.n() >= keys*perKey })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.count != keys*perKey {
		t.Errorf("handled %d facts, want %d: each once", k.count, keys*perKey)
	}
	requireKeyOrder(t, k.handled, perKey)
}

// A group's fact that cannot be settled (here: maxAttempts 1, so no retry
// ladder, and a dependency unavailable) is handed back to the member after
// a pause and handled again, while the partition reads on; its offset
// holds the partition's stored offset back until then, and the offset
// moves on after it. Before, it was dropped until the partition's next
// subscription, and the partition's offset was never stored again.
func TestSuperStreamGroupHandlesAgainAFactItCouldNotSettle(t *testing.T) {
	spec := superStreamSpec(1, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, MaxAttempts: 1,
		Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	conn := b.dial(Config{})
	h := &unavailableTwice{sku: "3"}
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, h.handle)})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	pub, _ := NewPublisher(conn, b.events())
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprint(i))
		mustPublish(t, pub, f, item{SKU: want[i]})
	}
	testenv.Eventually(t, "every fact handled", func() bool { return len(h.got.list()) >= len(want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h.check(t, want)
	partition := topology.PartitionStream(spec.Streams[0].Name, 0)
	store, err := conn.offsets(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	off, found, err := store.QueryOffset(context.Background(), b.consumer(0).Name, partition)
	if err != nil || !found || off < 9 {
		t.Fatalf("stored offset of %s: %d (found %v, %v); want the last fact's, 9 or later", partition, off, found, err)
	}
}

// A consumer group is joined, and its partitions' offsets read, under the
// consumer's name: a reader under an offset name of its own would join
// the live group, so the option is refused. A group reads over the stream
// protocol: reading over AMQP is refused too.
func TestSuperStreamConsumerRefusesAnOffsetName(t *testing.T) {
	spec := superStreamSpec(2, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	conn := b.dial(Config{})
	routes := []Route{Handle(orderedFact(), func(context.Context, Delivery, item) error { return nil })}
	_, err := NewConsumer(conn, b.consumer(0), routes, WithOffsetName("group.rebuild"))
	if err == nil || !strings.Contains(err.Error(), "WithOffsetName does not apply: the consumer reads super stream") {
		t.Fatalf("WithOffsetName on a consumer group's member: %v", err)
	}
	_, err = NewConsumer(conn, b.consumer(0), routes, WithStreamReadOverAMQP())
	if err == nil || !strings.Contains(err.Error(), "WithStreamReadOverAMQP does not apply: the consumer reads super stream") {
		t.Fatalf("WithStreamReadOverAMQP on a consumer group's member: %v", err)
	}
}

// A partition deleted under a consumer group's member ends its
// subscription: the member tries to subscribe again, warns at each
// failed try, and shows the failure in its Health; it stops when asked.
func TestSuperStreamGroupSaysItCannotSubscribeAgain(t *testing.T) {
	spec := superStreamSpec(2, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	rec := &logRecorder{}
	conn := b.dial(Config{Logger: slog.New(rec)})
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(orderedFact(), func(context.Context, Delivery, item) error { return nil })})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	partition := topology.PartitionStream(spec.Streams[0].Name, 0)
	testenv.Eventually(t, "the member active on its partitions", func() bool {
		return len(rec.values("active on a partition", "partition")) == 2
	})
	ch, err := conn.OpenChannel(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(partition, false, false, false); err != nil {
		t.Fatal(err)
	}
	_ = ch.Close()
	testenv.Eventually(t, "a failed try to subscribe again warned about", func() bool {
		return slices.Contains(rec.values("could not subscribe to a partition again; trying again", "partition"), partition)
	})
	if h := c.Health(); h.LastError == nil || !strings.Contains(h.LastError.Error(), partition) {
		t.Errorf("Health().LastError = %v, want the failure naming the partition", h.LastError)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A member's stream connection drops while a handler holds one fact and
// the member's line of facts is full, so that the stream client's
// deliveries wait for room. The member is told of every partition's loss
// at once and subscribes again to the partitions that have no fact in a
// handler, while the handler still holds its fact: a delivery waiting for
// room is dropped when its subscription ends, and read again, rather than
// holding back the loss, and the other partitions', until the handler
// returns. Every fact is handled once, in key order.
func TestSuperStreamGroupSubscribesAgainWhileAHandlerHoldsAFact(t *testing.T) {
	spec := superStreamSpec(3, topology.ConsumerSpec{Name: "group", Bindings: []string{"item.#"}, Backoff: testLadder,
		Concurrency: 1, Prefetch: 5, Start: topology.Start{Kind: topology.StartFirst}})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	const keys, perKey = 12, 20
	<-publishRounds(t, b, f, keys, perKey)

	px := newProxy(t, fmt.Sprintf("tcp://127.0.0.1:%d", b.streamPort), nil)
	_, port, _ := net.SplitHostPort(px.ln.Addr().String())
	proxyPort, _ := strconv.Atoi(port)
	rec := &logRecorder{}
	conn := b.dial(Config{StreamPort: proxyPort, Logger: slog.New(rec)})
	var tally keyTally
	hit, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	c, err := NewConsumer(conn, b.consumer(0), []Route{Handle(f, func(ctx context.Context, d Delivery, v item) error {
		if held.CompareAndSwap(false, true) {
			close(hit)
			<-release
		}
		tally.add(v)
		return nil
	})}, WithShutdownTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the consumer's stop, should the test fail
	<-hit
	testenv.Eventually(t, "the member active on its 3 partitions", func() bool {
		return len(rec.values("active on a partition", "partition")) == 3
	})
	px.cut()
	testenv.Eventually(t, "every partition's loss told, and 2 partitions subscribed again, while the handler holds its fact", func() bool {
		return len(rec.values("lost a partition's subscription; subscribing again", "partition")) == 3 &&
			len(rec.values("active on a partition", "partition")) == 5
	})
	free()
	tally.requireEachOnceInOrder(t, stop, keys, perKey)
}

// A consumer group's "next" is fixed per partition at the first member's
// first start, as a plain stream consumer's is: a member stopped before it
// settled a fact reads, at its next start, what was written meanwhile on
// every partition, and nothing written before its first start.
func TestSuperStreamGroupKeepsItsFirstStart(t *testing.T) {
	spec := superStreamSpec(2, topology.ConsumerSpec{Name: "late", Bindings: []string{"item.#"}, Backoff: testLadder})
	b := newSuperStreamBroker(t, spec)
	if b == nil {
		return
	}
	f := orderedFact()
	pub, _ := NewPublisher(b.dial(Config{}), b.events())
	for i := range 6 {
		mustPublish(t, pub, f, item{SKU: fmt.Sprintf("before-%d", i)})
	}
	start := func() (*skuLog, *logRecorder, func() error) {
		rec := &logRecorder{}
		c, got := skuReader(t, b, b.dial(Config{Logger: slog.New(rec)}), f)
		return got, rec, run(t, c)
	}
	got, rec, stop := start()
	testenv.Eventually(t, "the member active on both partitions", func() bool {
		return len(rec.values("active on a partition", "partition")) == 2
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(got.list()) != 0 {
		t.Fatalf("the first start read %v, want nothing: every fact was written before it", got.list())
	}
	var want []string
	for i := range 6 {
		want = append(want, fmt.Sprintf("while-stopped-%d", i))
		mustPublish(t, pub, f, item{SKU: want[i]})
	}
	got, _, stop = start()
	testenv.Eventually(t, "the facts written while stopped read", func() bool { return len(got.list()) >= len(want) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if read := slices.Sorted(slices.Values(got.list())); !slices.Equal(read, want) {
		t.Fatalf("the second start read %v, want %v: the facts written while the group was stopped, and no other", read, want)
	}
}
