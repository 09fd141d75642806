package topology

import "time"

// Topology is the whole broker topology of one spec, as plain data. The
// generator renders it as a Go literal, so every field is exported and
// holds only strings, numbers, durations and slices.
//
// Declaring a Topology means: every exchange, then every queue, then every
// binding, in slice order. Build orders the slices so that a queue exists
// before anything is bound to it or dead-letters into it.
type Topology struct {
	Exchanges []Exchange
	Queues    []Queue
	Bindings  []Binding
	Consumers []Consumer
	// Responders are the services that answer requests, each reading its
	// "<name>.requests" queue bound to the requests exchange.
	Responders []Responder
	// Delay is the delay levels of delayed facts (see delay.go), present
	// when the spec asked for them (Spec.Delays); the zero Delay otherwise.
	Delay Delay
}

// Exchange is one exchange to declare. warren declares only durable topic
// exchanges; the fields exist so a declaration reads completely.
type Exchange struct {
	Name    string
	Kind    string // "topic"; "direct" for the requests exchange; "x-consistent-hash" for an ordered consumer's; "fanout" for the delay levels' unroutable lane
	Durable bool   // always true
	// HashHeader is the header an x-consistent-hash exchange hashes on
	// (its hash-header argument); "" for other kinds.
	HashHeader string
	// AlternateExchange receives what the exchange cannot route (its
	// alternate-exchange argument): the delivery exchange of the delay
	// levels has one, so a due fact nobody binds is kept. "" for none.
	AlternateExchange string
	// SuperStream marks a super stream's exchange (x-super-stream), which
	// the stream protocol reads its partitions from.
	SuperStream bool
}

// Arguments returns the exchange's arguments for its declaration.
func (e Exchange) Arguments() map[string]any {
	if e.HashHeader == "" && e.AlternateExchange == "" && !e.SuperStream {
		return nil
	}
	args := map[string]any{}
	if e.HashHeader != "" {
		args["hash-header"] = e.HashHeader
	}
	if e.AlternateExchange != "" {
		args["alternate-exchange"] = e.AlternateExchange
	}
	if e.SuperStream {
		args["x-super-stream"] = true
	}
	return args
}

// Role says what a queue is for within its consumer.
type Role string

// The roles of a consumer's queues.
const (
	RoleWork   Role = "work"   // the queue the consumer reads
	RoleRetry  Role = "retry"  // a delay queue of the retry ladder
	RolePoison Role = "poison" // where failures wait for a human
	RoleShard  Role = "shard"  // one shard of an ordered consumer, read by a single active consumer
)

// QueueType is the RabbitMQ queue type, sent as x-queue-type.
type QueueType string

// The queue types warren declares.
const (
	Quorum  QueueType = "quorum"  // replicated; supports delivery limits and at-least-once dead-lettering
	Classic QueueType = "classic" // single-node; no delivery limit
)

// Queue is one durable queue to declare. Its x-arguments are derived from the
// typed fields by [Queue.Arguments], so a literal of this struct reads as a
// description rather than as a bag of broker strings.
type Queue struct {
	Name          string
	Consumer      string        // the consumer the queue belongs to
	Role          Role          // work, retry or poison
	Type          QueueType     // quorum or classic
	MessageTTL    time.Duration // retry queues: how long each message waits (x-message-ttl); 0 means none
	DeadLetter    *DeadLetter   // where expired, rejected or over-limit messages go; nil means nowhere
	DeliveryLimit int           // quorum work queues: deliveries without ack before dead-lettering (x-delivery-limit); 0 means none
	// MaxLength and MaxLengthBytes bound a work queue (x-max-length,
	// x-max-length-bytes, with x-overflow: reject-publish); 0 means none.
	MaxLength      int
	MaxLengthBytes int64
	MaxPriority    int // classic work queues: x-max-priority; quorum (RabbitMQ 4): QuorumMaxPriority, no argument; 0 means none
	// SingleActiveConsumer lets only one consumer at a time read the queue
	// (x-single-active-consumer), so its messages are handled in queue
	// order; the others wait to take over. Shard queues only.
	SingleActiveConsumer bool
	// MaxAge and SegmentBytes are a stream's retention by age
	// (x-max-age) and the size of its segment files
	// (x-stream-max-segment-size-bytes); MaxLengthBytes is then its
	// retention by size. Streams only (Type Stream, Role RoleStream).
	MaxAge       time.Duration
	SegmentBytes int64
	// Direct makes a Publisher write the facts that only this stream's
	// bindings match into the stream over the stream protocol instead of
	// through the events exchange (see [Topology.DirectStream]). Plain
	// streams only.
	Direct bool
}

// DeadLetter names where a queue sends the messages it gives up on.
type DeadLetter struct {
	Exchange string // "" is the default exchange, which routes by queue name
	// RoutingKey replaces the message's routing key (x-dead-letter-routing-key);
	// "" keeps the key it was published with, as the delay levels need.
	RoutingKey string
	// AtLeastOnce makes the broker keep a message in the source queue until
	// the target confirms it (x-dead-letter-strategy: at-least-once). Quorum
	// queues only; it requires x-overflow: reject-publish, which
	// [Queue.Arguments] adds.
	AtLeastOnce bool
}

// Binding binds a queue to an exchange with a topic pattern, or, on a
// headers exchange, by a header's presence.
type Binding struct {
	Exchange string
	Queue    string // "" when the destination is an exchange
	Key      string // a topic pattern: '*' matches one word, '#' zero or more
	// ToExchange is the destination of an exchange-to-exchange binding (the
	// events exchange to an ordered consumer's hash exchange); Queue is
	// then "". A hash exchange's binding key to a shard is its weight, "1".
	ToExchange string
	// Header, on a headers exchange (a delay level), is the header the
	// binding matches when it is boolean true: its arguments are x-match
	// all and the header, true ([Binding.Arguments]). Key is then "".
	Header string
	// Partition, on a super stream's exchange, is the position of the
	// bound partition stream counted from 1 (sent as
	// x-stream-partition-order, counted from 0); 0 for other bindings.
	Partition int
}

// Arguments returns the binding's arguments as declared: for a Header
// binding, x-match all and the header with the value true, nil otherwise.
// A value rather than AMQP's void ("present, with any value") because
// definitions exported as JSON cannot carry void: rabbitmqctl
// import_definitions refuses a null.
func (b Binding) Arguments() map[string]any {
	if b.Partition > 0 {
		return map[string]any{"x-stream-partition-order": b.Partition - 1}
	}
	if b.Header == "" {
		return nil
	}
	return map[string]any{"x-match": "all", b.Header: true}
}

// Consumer is what the runtime needs to run one consumer: its queues, the
// exchanges it republishes to, the retry ladder and its limits.
type Consumer struct {
	Name          string
	Queue         string // the work queue
	PoisonQueue   string
	RetryExchange string // retry copies are published here, routing key Tier.Queue
	DeadExchange  string // poison copies are published here, routing key Name
	// Tiers is the retry ladder, one entry per step in ladder order. After
	// the n-th failed attempt a copy goes to Tiers[n-1], or to the last tier
	// once the ladder is used up. Steps with equal delays share a queue.
	Tiers       []Tier
	MaxAttempts int // handler attempts before a transient failure goes to poison
	// MaxDeferrals is how often one fact may be deferred (runtime.Defer);
	// the deferral beyond it sends the fact to poison.
	MaxDeferrals int
	Prefetch     int // unacknowledged deliveries the broker sends ahead
	Concurrency  int // handlers running at once
	// DeferExchange is the top delay level's exchange, for a plain
	// consumer's deferred copies: a copy enters the levels at
	// DelayLevelExchange(DeferExchange, k) for its delay's highest level
	// k, its key made by DeferredRoutingKey for Queue. "" when the
	// topology has no delay levels, and for ordered consumers, which defer
	// in place.
	DeferExchange string

	// Ordered consumers (see ordered.go) read Shards, the shard queues
	// behind the x-consistent-hash exchange ShardExchange, and have no work
	// queue (Queue is "") and no retry tiers: a failing fact is retried in
	// place after each of Delays, so that the later facts of its key never
	// overtake it. Park makes a poisoned fact's later facts of its key
	// follow it to poison. DeliveryLimit is the shard queues'
	// x-delivery-limit (0 for classic shards, which have none): the
	// runtime poisons a fact on the last delivery the broker allows
	// itself, so that its key is parked behind it, and hands a shard to
	// another instance only with facts in hand that were never returned
	// to it before, so that hand-overs take at most one of a fact's
	// deliveries (runtime/ordered_share.go).
	ShardExchange string
	Shards        []string
	Delays        []time.Duration
	Park          bool
	DeliveryLimit int

	// Batch is a batch consumer's batch (see [Batch]); its zero value
	// means the handler takes one fact at a time.
	Batch Batch

	// Stream, for a stream consumer (see stream.go), is the stream it
	// reads beside its work queue, which then receives only its own
	// retries; Start is where it reads from before it has an offset of
	// its own on the broker.
	Stream string
	Start  Start
	// Patterns are a stream consumer's bindings: the topic patterns of the
	// stream's facts it handles. A fact of the stream that one matches and
	// that the consumer has no route for (a fact its code does not know)
	// is poisoned as not handled, as a queue consumer's would be; the
	// others are other consumers' and skipped.
	Patterns []string
	// Partitions, when Stream is a super stream, are its partition
	// streams in order: the consumer joins the group of its name on each,
	// and the broker makes one member of the group active per partition.
	Partitions []string
}

// Binds reports whether the stream consumer's patterns match key.
func (c Consumer) Binds(key string) bool {
	for _, p := range c.Patterns {
		if TopicMatch(p, key) {
			return true
		}
	}
	return false
}

// Ordered reports whether the consumer handles facts in order per key.
func (c Consumer) Ordered() bool { return len(c.Shards) > 0 }

// Delay returns how long an ordered consumer waits before the next attempt
// after the given failed attempt (1 for the first): the ladder's step, the
// last repeating.
func (c Consumer) Delay(attempt int) time.Duration {
	if len(c.Delays) == 0 {
		return 0
	}
	return c.Delays[min(max(attempt, 1), len(c.Delays))-1]
}

// Tier is one step of a retry ladder.
type Tier struct {
	Delay time.Duration
	Queue string // the delay queue; also the routing key on the retry exchange
}

// TierFor returns the delay tier that a copy goes to after the given failed
// attempt (1 for the first), and false when the consumer has no tiers.
func (c Consumer) TierFor(attempt int) (Tier, bool) {
	if len(c.Tiers) == 0 {
		return Tier{}, false
	}
	i := min(max(attempt, 1), len(c.Tiers)) - 1
	return c.Tiers[i], true
}

// DistinctTiers returns the tiers of the ladder with a queue of their own,
// in ladder order: one per delay queue, as the broker has them. Steps with
// equal delays share a tier's queue and appear once.
func (c Consumer) DistinctTiers() []Tier {
	var out []Tier
	seen := map[string]bool{}
	for _, t := range c.Tiers {
		if !seen[t.Queue] {
			seen[t.Queue] = true
			out = append(out, t)
		}
	}
	return out
}

// Consumer returns the consumer with the given name.
func (t Topology) Consumer(name string) (Consumer, bool) {
	for _, c := range t.Consumers {
		if c.Name == name {
			return c, true
		}
	}
	return Consumer{}, false
}

// Queue returns the queue with the given name.
func (t Topology) Queue(name string) (Queue, bool) {
	for _, q := range t.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return Queue{}, false
}

// Part returns the subset of t that belongs to the named consumers (and
// responders): the
// exchanges, their queues and their bindings. It lets one service declare
// only what it uses.
func (t Topology) Part(consumers ...string) Topology {
	want := map[string]bool{}
	for _, c := range consumers {
		want[c] = true
	}
	part := Topology{Exchanges: t.Exchanges}
	queues := map[string]bool{}
	// The delay levels are shared by every consumer: a part has them all,
	// and of the delivery exchange's bindings those of its consumers.
	part.Delay = t.Delay
	exchanges := map[string]bool{}
	for _, c := range t.Consumers {
		if want[c.Name] && c.ShardExchange != "" {
			exchanges[c.ShardExchange] = true
		}
	}
	if t.Delay.Enabled() {
		exchanges[t.Delay.Deliver] = true
	}
	for _, q := range t.Queues {
		if q.Role == RoleDelay {
			exchanges[q.Name] = true // each level's exchange and queue share its name
		}
	}
	for _, c := range t.Consumers {
		if want[c.Name] && c.Stream != "" {
			want[c.Stream] = true // a stream queue's Consumer is its own name in this map
		}
	}
	for _, q := range t.Queues {
		if want[q.Consumer] || q.Role == RoleStream && want[q.Name] || q.Role == RoleDelay || q.Role == RoleUnroutable {
			part.Queues = append(part.Queues, q)
			queues[q.Name] = true
		}
	}
	for _, b := range t.Bindings {
		if queues[b.Queue] || b.ToExchange != "" && exchanges[b.ToExchange] {
			part.Bindings = append(part.Bindings, b)
		}
	}
	for _, c := range t.Consumers {
		if want[c.Name] {
			part.Consumers = append(part.Consumers, c)
		}
	}
	for _, r := range t.Responders {
		if want[r.Name] {
			part.Responders = append(part.Responders, r)
		}
	}
	return part
}
