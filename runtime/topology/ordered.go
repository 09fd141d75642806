package topology

import (
	"strconv"
)

// An ordered consumer handles the facts of one ordering key one at a time,
// in publish order, and different keys in parallel. Its topology is built
// from what RabbitMQ ships:
//
//   - an x-consistent-hash exchange "<consumer>.ordered" (plugin
//     rabbitmq_consistent_hash_exchange), bound to the events exchange by
//     each of the consumer's patterns, hashing on the header
//     OrderingKeyHeader that the publisher sets on every fact with an
//     ordering key: all facts of one key reach the same shard;
//   - Shards shard queues "<consumer>.shard.<i>", each bound to the hash
//     exchange with weight 1 and declared x-single-active-consumer, so that
//     one consumer at a time reads a shard, in queue order, however many
//     instances run; a quorum shard has the consumer's delivery limit as a
//     work queue does, which the runtime enforces before the broker
//     (Consumer.DeliveryLimit);
//   - the poison queue, as for every consumer. There are no delay queues: a
//     retry through one would let the key's later facts overtake it, so an
//     ordered consumer retries in place.
//
// Adding or removing shards moves keys between shards: facts of a moved key
// published before the change may still wait in the old shard while newer
// ones are handled from the new one. Drain the consumer (stop its
// producers or let its shards empty) before changing Shards.

// OrderingKeyHeader is the header carrying a fact's ordering key, which the
// hash exchange hashes on; runtime.HeaderOrderingKey is the same name.
const OrderingKeyHeader = "x-ordering-key"

// HashExchangeKind is the exchange type of an ordered consumer's shards.
const HashExchangeKind = "x-consistent-hash"

// HashExchangePlugin is the RabbitMQ plugin that provides HashExchangeKind.
const HashExchangePlugin = "rabbitmq_consistent_hash_exchange"

// maxShards bounds Shards: each is a queue and a consumer per instance.
const maxShards = 64

// ShardExchange returns the name of an ordered consumer's hash exchange,
// "<consumer>.ordered".
func ShardExchange(consumer string) string { return consumer + ".ordered" }

// ShardQueue returns the name of an ordered consumer's i-th shard queue
// (from 0), "<consumer>.shard.<i>".
func ShardQueue(consumer string, i int) string { return consumer + ".shard." + strconv.Itoa(i) }

func buildOrdered(ex Exchanges, c ConsumerSpec) ([]Queue, []Binding, Consumer) {
	poison := PoisonQueue(c.Name)
	hash := ShardExchange(c.Name)
	consumer := Consumer{
		Name: c.Name, PoisonQueue: poison, DeadExchange: ex.Dead, RetryExchange: ex.Retry,
		MaxAttempts: c.MaxAttempts, MaxDeferrals: c.MaxDeferrals, Prefetch: c.Prefetch, Concurrency: c.Concurrency,
		ShardExchange: hash, Delays: c.Backoff, Park: c.Park, DeliveryLimit: deliveryLimit(c),
	}
	if c.Batch != nil {
		consumer.Batch = *c.Batch
	}
	queues := []Queue{{Name: poison, Consumer: c.Name, Role: RolePoison, Type: c.QueueType}}
	var bindings []Binding
	for _, key := range c.Bindings {
		bindings = append(bindings, Binding{Exchange: ex.Events, ToExchange: hash, Key: key})
	}
	for i := range c.Shards {
		name := ShardQueue(c.Name, i)
		consumer.Shards = append(consumer.Shards, name)
		queues = append(queues, Queue{
			Name: name, Consumer: c.Name, Role: RoleShard, Type: c.QueueType,
			DeadLetter:           &DeadLetter{Exchange: ex.Dead, RoutingKey: c.Name, AtLeastOnce: c.QueueType == Quorum},
			DeliveryLimit:        deliveryLimit(c),
			MaxLength:            c.MaxLength,
			MaxLengthBytes:       c.MaxLengthBytes,
			MaxPriority:          c.MaxPriority,
			SingleActiveConsumer: true,
		})
		bindings = append(bindings, Binding{Exchange: hash, Queue: name, Key: "1"})
	}
	bindings = append(bindings, Binding{Exchange: ex.Dead, Queue: poison, Key: c.Name})
	return queues, bindings, consumer
}

// checkOrdered adds to ps what is wrong with an ordered consumer's settings.
func checkOrdered(ps *problems, c ConsumerSpec) {
	switch {
	case !c.Ordered && c.Stream != "" && (c.Shards != 0 || c.Park):
		ps.add("shards", -1, "shards and onPoison: a stream consumer reads its stream in the stream's order, without shards; remove them, or read a queue as an ordered consumer")
	case !c.Ordered && (c.Shards != 0 || c.Park):
		ps.add("shards", -1, "shards and onPoison: only for an ordered consumer (set ordered: true)")
	case c.Ordered && (c.Shards < 1 || c.Shards > maxShards):
		ps.add("shards", -1, "shards %d: expected 1 to %d", c.Shards, maxShards)
	case c.Ordered && c.MaxPriority > 0:
		// A priority queue hands out later facts first, which would break
		// the key's order.
		ps.add("maxPriority", -1, "maxPriority %d: an ordered consumer handles facts in publish order; a priority would let a later fact of a key overtake an earlier one", c.MaxPriority)
	}
}
