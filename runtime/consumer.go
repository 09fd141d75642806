package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Consumer reads one consumer's work queue and settles every delivery by
// the wire contract: success acks; a transient failure sends a copy to the
// next delay tier and a permanent one (or the last attempt) a copy to the
// poison queue, each confirmed by the broker before the original is acked.
// Nothing is acked that is not done or safely copied, so a crash at any
// point leaves the message in a queue. An ordered consumer
// (topology.Consumer.Shards) reads its shard queues instead, see ordered.go.
type Consumer struct {
	core
	spec   topology.Consumer
	routes map[string]Route
	chain  HandlerFunc // the middleware, the guard and the handler call, built once
	// newerSeen remembers the (routing key, version) pairs newer than the
	// consumer's that were logged already. A map under a mutex, not a
	// sync.Map: a package that names Consumer would compile its own copy
	// of sync.Map's generic hash trie.
	newerMu   sync.Mutex
	newerSeen map[versionKey]bool

	ordered *orderedState // ordered consumers only: sequences and parked keys
	batch   *batchState   // batch consumers only: the handler and the guard's batch claims
	// run is the kind's engine. The engine itself is no field: a package
	// that names Consumer (every generated one) would otherwise compile
	// its own copy of the generic engine's methods.
	run func(ctx context.Context) error
}

// HandlerFunc handles one delivery whose envelope, route and payload have
// already been checked; the fact itself is decoded by the [Route].
type HandlerFunc func(ctx context.Context, d Delivery) error

// Middleware wraps the handling of each delivery, for tracing, logging or
// timeouts. It may return an error marked with [Permanent].
type Middleware func(next HandlerFunc) HandlerFunc

// plainRefuses are the options that do not apply to a plain consumer.
var plainRefuses = map[optionSet]string{
	optMaxDeferInPlace: "a plain consumer's deferred facts wait in the delay levels, not in place",
}

// NewConsumer returns a consumer of c's work queue (or, for an ordered
// consumer, its shard queues) that dispatches each fact by routing key to
// one of routes. Facts with no route go to poison. Run starts it. Every
// [ConsumerOption] applies to both.
func NewConsumer(conn *Conn, c topology.Consumer, routes []Route, opts ...ConsumerOption) (*Consumer, error) {
	if c.Batched() {
		return nil, fmt.Errorf("new consumer %q: a batch consumer (topology.Consumer.Batch): build it with NewBatchConsumer", c.Name)
	}
	refused := plainRefuses
	if c.Ordered() {
		refused = nil
	}
	cons, err := newConsumer(conn, c, routes, refused, opts)
	if err != nil {
		return nil, err
	}
	if c.Stream != "" {
		if c.Ordered() {
			return nil, fmt.Errorf("new consumer %q: a stream consumer cannot be ordered", c.Name)
		}
		if conn.offsetDialer() == nil {
			// Named now rather than at Run, when the first offset is read.
			return nil, fmt.Errorf("new consumer %q: %w", c.Name, ErrNoOffsetStore)
		}
		if len(c.Partitions) > 0 {
			if cons.opts.given&optOffsetName != 0 {
				// A group is joined, and its partitions' offsets read, under
				// the consumer's name: a reader under another name would
				// join the live group and take its partitions.
				return nil, fmt.Errorf("new consumer %q: WithOffsetName does not apply: the consumer reads super stream %q as a member of its consumer group; give a rebuilt projection a consumer of its own in warren.json", c.Name, c.Stream)
			}
			if cons.opts.given&optReadOverAMQP != 0 {
				return nil, fmt.Errorf("new consumer %q: WithStreamReadOverAMQP does not apply: the consumer reads super stream %q as a member of its consumer group, which reads over the stream protocol", c.Name, c.Stream)
			}
			feed := &groupFeed{in: make(chan streamJob, cons.opts.prefetch), wake: make(chan struct{}, 1)}
			p := &partitionTrackers{c: cons, by: map[string]*offsetTracker{}}
			for _, name := range c.Partitions {
				p.of(name)
			}
			eng := &engine[streamJob]{core: &cons.core, kind: groupKind{c: cons, feed: feed}}
			cons.run = runGroup(cons, eng, feed, p)
			return cons, nil
		}
		t := newOffsetTracker(cons)
		overAMQP := runStream(cons, &engine[streamJob]{core: &cons.core, kind: streamKind{c: cons, t: t}}, t)
		feed := &groupFeed{in: make(chan streamJob, cons.opts.prefetch), wake: make(chan struct{}, 1)}
		k := readKind{groupKind: groupKind{c: cons, feed: feed}, t: t}
		cons.run = runRead(cons, &engine[streamJob]{core: &cons.core, kind: k}, k, overAMQP)
		return cons, nil
	}
	var k kind[amqp.Delivery] = plainKind{cons}
	if c.Ordered() {
		cons.ordered = newOrderedState()
		k = orderedKind{cons}
	}
	cons.run = (&engine[amqp.Delivery]{core: &cons.core, kind: k}).run
	return cons, nil
}

// newConsumer checks c, routes and opts and returns the consumer that
// every kind shares, without its engine.
func newConsumer(conn *Conn, c topology.Consumer, routes []Route, refused map[optionSet]string, opts []ConsumerOption) (*Consumer, error) {
	o, err := newOptions(c.Prefetch, c.Concurrency, opts, refused)
	errs := []error{err, checkStreamOptions(o, c.Stream), checkOffsetNameOwner(conn, c, o)}
	if conn == nil {
		errs = append(errs, errors.New("nil Conn"))
	}
	if c.Name == "" || c.Queue == "" && !c.Ordered() || c.PoisonQueue == "" || c.DeadExchange == "" {
		errs = append(errs, errors.New("incomplete topology.Consumer: use one from topology.Build"))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts %d: expected at least 1", c.MaxAttempts))
	} else if c.MaxAttempts > 1 && !c.Ordered() && (len(c.Tiers) == 0 || c.RetryExchange == "") {
		errs = append(errs, fmt.Errorf("MaxAttempts %d needs retry tiers and a retry exchange", c.MaxAttempts))
	}
	if c.DeferExchange != "" && len(c.Queue) > topology.MaxDeferQueueLen {
		errs = append(errs, fmt.Errorf("work queue %q: longer than %d bytes cannot take deferred facts", c.Queue, topology.MaxDeferQueueLen))
	}
	if c.DeferExchange != "" && topology.DelayLevelExchange(c.DeferExchange, 0) == "" {
		errs = append(errs, fmt.Errorf("DeferExchange %q: expected the top delay level's exchange, <events>.delay.%d", c.DeferExchange, topology.DelayLevels-1))
	}
	if len(routes) == 0 {
		errs = append(errs, errors.New("no routes"))
	}
	byKey := map[string]Route{}
	for _, r := range routes {
		switch key := r.fact.RoutingKey; {
		case r.decode == nil || key == "":
			errs = append(errs, errors.New("route without a fact: build routes with Handle"))
		case byKey[key].decode != nil:
			errs = append(errs, fmt.Errorf("two routes for %q", key))
		default:
			byKey[key] = r
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new consumer %q: %w", c.Name, err)
	}
	cons := &Consumer{
		core: newCore(conn, c.Name, "consumer", o),
		spec: c, routes: byKey,
		chain: buildChain(guardName(c.Name, o.offsetName), o.guard, o.middleware),
	}
	cons.consumeArgs = amqp.Table{ArgReads: announceReads(routes)}
	return cons, nil
}

// checkOffsetNameOwner refuses an offset name given a stream consumer
// with [WithOffsetName] that is the own name of another consumer of the
// topology the Conn declares (Config.Topology; without one, there is
// nothing to check against). Under the name of another consumer of the
// same stream the reader would read from that consumer's offset and store
// its own there, and that consumer would then start where the reader
// stopped; under any other consumer's name (one that reads a queue too)
// its guard would claim facts under that consumer's name, and each would
// take the facts the other handled for duplicates.
func checkOffsetNameOwner(conn *Conn, c topology.Consumer, o consumerOptions) error {
	if conn == nil || conn.cfg.Topology == nil || o.given&optOffsetName == 0 || c.Stream == "" || o.offsetName == c.Name {
		return nil
	}
	other, ok := conn.cfg.Topology.Consumer(o.offsetName)
	if !ok {
		return nil
	}
	why := "its guard claims facts under that name, as the reader's would, so each would take the facts the other handled for duplicates"
	if other.Stream == c.Stream && len(other.Partitions) == 0 {
		why = fmt.Sprintf("it keeps its own offset on stream %q under that name: the reader would read from and store that offset, and %s would then start where the reader stopped, not at its own start", c.Stream, other.Name)
	}
	return fmt.Errorf("WithOffsetName(%q): the own name of consumer %q of the Conn's topology: %s; give the reader a name of its own, such as %q", o.offsetName, other.Name, why, c.Name+".rebuild")
}

// Run consumes until ctx is cancelled, then stops taking deliveries, gives
// back those not yet started, waits for running handlers (bounded by the
// shutdown timeout) and returns. (An ordered consumer keeps its shards'
// deliveries until its running handlers finish and then closes its
// channel, which returns them to their shards in order.) Across connection and channel losses it
// resumes by itself. It returns nil after a clean shutdown, and an error if
// the work queue does not exist, the Conn was closed, or handlers outlived
// the shutdown timeout (their messages return to the queue).
func (c *Consumer) Run(ctx context.Context) error { return c.run(ctx) }

// Name returns the consumer's name in the topology.
func (c *Consumer) Name() string { return c.name }

// Health reports the consumer's connection (as [Conn.Health]), whether it
// runs, and whether it is paused for an outage of a dependency.
func (c *Consumer) Health() Health { return c.health() }

// plainKind is a consumer of one work queue: each worker handles the next
// delivery and settles it by the wire contract, and an outage pauses it.
type plainKind struct{ c *Consumer }

func (k plainKind) queues() []string { return []string{k.c.spec.Queue} }

func (k plainKind) source(r *channelRun, feeds []<-chan amqp.Delivery) source[amqp.Delivery] {
	return ackSource{feed: feeds[0], acks: r.acks}
}

func (k plainKind) work(r *channelRun, d amqp.Delivery) { k.c.processAcks(r.hctx, r.s, d, r.acks) }

func (k plainKind) giveBack(d amqp.Delivery, why string) { k.c.giveBack(d, why) }

func (k plainKind) hold(r *channelRun, d amqp.Delivery) { k.c.hold(r.hctx, inspect(r.s, d), errPaused) }

func (k plainKind) probe(r *channelRun, d amqp.Delivery) error { return k.c.process(r.hctx, r.s, d) }

func (plainKind) traits() traits {
	return traits{pauses: true, queueNoun: "work queue", acksTogether: true}
}

func consumerTag(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "." + hex.EncodeToString(b[:])
}
