package topology

import "time"

// Spec is the input to [Build]: the exchanges and the consumers of one
// schema directory, as read from its manifest.
type Spec struct {
	Exchanges Exchanges
	Consumers []ConsumerSpec
	// Responders answer requests (see responders.go); none means no
	// requests exchange is declared.
	Responders []ResponderSpec
	// Delays declares the delay levels of delayed facts (see delay.go):
	// DelayLevels exchanges and queues shared by the whole topology, a
	// delivery exchange every work queue is bound to, and the lane of due
	// facts no consumer binds. Without it facts can only be published now.
	Delays bool
	// Streams are the streams facts are appended to (see stream.go),
	// declared before the consumers that read them.
	Streams []StreamSpec
}

// Exchanges names the three exchanges. An empty name takes its default
// from [DefaultExchanges].
type Exchanges struct {
	Events string // facts are published here
	Retry  string // retry copies wait behind it in delay queues
	Dead   string // poison copies and over-limit messages go here
	// Requests is the durable direct exchange requests go through, declared
	// only when there are responders. Default [DefaultRequestsExchange].
	Requests string
}

// ConsumerSpec describes one consumer. Zero values take the defaults
// documented on each field.
type ConsumerSpec struct {
	Name     string   // the consumer and work-queue name
	Bindings []string // topic patterns on the events exchange; at least one
	// QueueType of the work and poison queues: "quorum" (default) or
	// "classic". Delay queues are always quorum, because only quorum queues
	// dead-letter at-least-once, and a retry must not vanish on its way back.
	QueueType   QueueType
	Prefetch    int // default max(DefaultPrefetch, 2*Concurrency)
	Concurrency int // default DefaultConcurrency
	// MaxAttempts counts handler attempts, the first included; the attempt
	// that fails with MaxAttempts used goes to poison. Default len(Backoff)+1.
	MaxAttempts int
	// MaxDeferrals bounds how often one fact may be deferred by the
	// consumer's handler (runtime.Defer): the deferral beyond it sends the
	// fact to poison. Default DefaultMaxDeferrals.
	MaxDeferrals int
	// Backoff is the retry ladder: the delay after the first failed
	// attempt, after the second, and so on; the last step repeats. Only the
	// first MaxAttempts-1 steps can be used, so only those get queues.
	// Default DefaultBackoff (none when MaxAttempts is 1).
	Backoff []time.Duration
	// DeliveryLimit is how many times a quorum work queue delivers a message
	// that is never acked (its consumer crashed or lost its connection)
	// before dead-lettering it to poison. Default DefaultDeliveryLimit;
	// ignored for classic queues, which have no such limit.
	DeliveryLimit int
	// MaxLength and MaxLengthBytes bound the work queue (x-max-length,
	// x-max-length-bytes; 0 means no bound). A full queue refuses new
	// messages (x-overflow: reject-publish): the broker nacks the publish
	// and the publisher's error matches runtime.ErrRejected, so producers
	// learn that the consumer cannot keep up instead of filling a disk.
	MaxLength      int
	MaxLengthBytes int64
	// MaxPriority makes the work queue a priority queue (0 means none): a
	// fact published with a higher priority overtakes the backlog. A
	// classic queue gets x-max-priority (1 to 255 levels). A quorum queue
	// gets no argument: RabbitMQ 4 quorum queues have two levels (priority
	// 5 and above is high), so MaxPriority must be QuorumMaxPriority, and
	// declaring it on RabbitMQ 3, whose quorum queues have no priorities,
	// fails ([Queue.CheckFor]) instead of ignoring them silently.
	MaxPriority int
	// Ordered makes the consumer handle facts with the same ordering key
	// one at a time in publish order (see ordered.go): its facts reach
	// Shards shard queues through an x-consistent-hash exchange instead of
	// one work queue. Shards defaults to DefaultShards. Park makes the later
	// facts of a key whose fact went to poison follow it there.
	Ordered bool
	Shards  int
	Park    bool
	// Batch, when set, makes the consumer's handler take its facts in
	// batches (see [Batch]); the default Prefetch is then at least
	// Batch.Size × Concurrency.
	Batch *Batch
	// Stream makes the consumer a stream consumer (see stream.go): it
	// reads the named stream of Spec.Streams instead of a work queue bound
	// to the events exchange, from Start the first time (default
	// StartNext) and from its stored offset after that. Bindings then
	// choose which of the stream's facts it handles; the others it skips.
	Stream string
	Start  Start
}

// Defaults applied by [Build] to zero fields.
var (
	DefaultExchanges = Exchanges{Events: "app.events", Retry: "app.retry", Dead: "app.dead"}
	DefaultBackoff   = []time.Duration{
		1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 60 * time.Second,
	}
)

// Defaults applied by [Build] to zero fields.
const (
	DefaultConcurrency = 1
	DefaultPrefetch    = 10
	// DefaultDeliveryLimit leaves room for redeliveries after ordinary
	// restarts and reconnects (each returns unacked messages and counts as a
	// delivery) while still stopping a message that crashes its consumer.
	DefaultDeliveryLimit = 10
	DefaultQueueType     = Quorum
	// DefaultShards is the number of shard queues of an ordered consumer.
	DefaultShards = 4
	// DefaultMaxDeferrals lets a fact wait for its moment a hundred times
	// (hourly for four days, say) before a handler that defers it forever
	// is taken for the bug it is.
	DefaultMaxDeferrals = 100
)

func (e Exchanges) withDefaults() Exchanges {
	if e.Events == "" {
		e.Events = DefaultExchanges.Events
	}
	if e.Retry == "" {
		e.Retry = DefaultExchanges.Retry
	}
	if e.Dead == "" {
		e.Dead = DefaultExchanges.Dead
	}
	return e
}

func (c ConsumerSpec) withDefaults() ConsumerSpec {
	if c.QueueType == "" {
		c.QueueType = DefaultQueueType
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Prefetch == 0 {
		c.Prefetch = max(DefaultPrefetch, 2*c.Concurrency)
		if c.Batch != nil && c.Batch.Size > 0 {
			c.Prefetch = max(c.Prefetch, min(c.Batch.Size*c.Concurrency, maxPrefetch))
		}
	}
	if c.Backoff == nil && c.MaxAttempts != 1 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = len(c.Backoff) + 1
	}
	if c.MaxAttempts > 0 && len(c.Backoff) > c.MaxAttempts-1 {
		c.Backoff = c.Backoff[:c.MaxAttempts-1]
	}
	if c.MaxDeferrals == 0 {
		c.MaxDeferrals = DefaultMaxDeferrals
	}
	if c.Ordered && c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.DeliveryLimit == 0 && c.QueueType == Quorum {
		c.DeliveryLimit = DefaultDeliveryLimit
	}
	return c
}
