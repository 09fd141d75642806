package poison

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Source is the queue that [ListFrom] and [ReplayWith] read: a consumer's
// poison queue, or the archive that [Discard] fills.
type Source string

// The sources of a listing or a replay.
const (
	FromPoison    Source = "poison"    // <consumer>.poison; the zero Source means this too
	FromDiscarded Source = "discarded" // <consumer>.discarded, see [DiscardQueue]
)

// Queue returns the name of the queue s stands for in consumer c.
func (s Source) Queue(c topology.Consumer) string {
	if s == FromDiscarded {
		return DiscardQueue(c)
	}
	return c.PoisonQueue
}

// ParseSource reads a source by name: "poison" or "discarded".
func ParseSource(name string) (Source, error) {
	switch Source(name) {
	case FromPoison, FromDiscarded:
		return Source(name), nil
	}
	return "", fmt.Errorf("source %q: expected poison or discarded", name)
}

// ReplayOptions say where a replay reads and where it sends.
type ReplayOptions struct {
	// From is the queue to take messages from; the zero value is the
	// poison queue.
	From Source
	// Exchange, when not empty, sends each message through this exchange
	// (the events exchange) with the routing key it was first published
	// with, instead of to the consumer's work queue alone. Every consumer
	// bound to that key then receives it again: use it when the fact
	// itself must be redelivered to everybody, never to retry one
	// consumer's failure. A fact one consumer deferred (runtime.Defer),
	// found in the unroutable lane because its work queue was gone when
	// it fell due, goes to that work queue alone instead.
	Exchange string
}

// ListFrom is [List] over the queue from stands for.
func ListFrom(ctx context.Context, conn Broker, c topology.Consumer, from Source, f Filter) ([]Message, error) {
	return list(ctx, conn, c, from.Queue(c), f)
}

// ReplayWith is [Replay] with a choice of source and destination. The
// copies are made as Replay makes them (attempts reset, the failure kept
// as x-last-failure, the replay counted); copies taken from the discard
// archive lose the discard headers, since they are no longer discarded.
// Each copy is published mandatory and confirmed before the original is
// acked; a copy that no queue takes is an error and its original stays.
func ReplayWith(ctx context.Context, conn Broker, c topology.Consumer, f Filter, o ReplayOptions) ([]Message, error) {
	src := o.From.Queue(c)
	dst := c.Queue
	if c.Ordered() {
		dst = "exchange " + c.ShardExchange
	}
	if o.Exchange != "" {
		dst = "exchange " + o.Exchange
	}
	done, err := replayWith(ctx, conn, c, f, o)
	if err != nil {
		return done, fmt.Errorf("replay %s to %s: %w", src, dst, err)
	}
	return done, nil
}

func replayWith(ctx context.Context, conn Broker, c topology.Consumer, f Filter, o ReplayOptions) ([]Message, error) {
	if o.Exchange == "" && !c.Ordered() {
		// A replay into a queue that does not exist would be returned
		// unroutable anyway; asking first gives the better message.
		if err := checkQueue(ctx, conn, c.Queue); err != nil {
			return nil, err
		}
	}
	pub, err := openPublisher(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer pub.close()
	s, err := openScan(ctx, conn, o.From.Queue(c), f.moving())
	if err != nil {
		return nil, err
	}
	defer s.close(ctx)

	target := func(m Message) (string, string, error) { return "", c.Queue, nil }
	if c.Ordered() {
		// An ordered consumer has no work queue: its own hash exchange
		// puts the copy in its key's shard by the x-ordering-key header,
		// which the copy keeps, and no other consumer is bound to it.
		target = func(m Message) (string, string, error) { return c.ShardExchange, m.RoutingKey, nil }
	}
	if o.Exchange != "" {
		target = func(m Message) (string, string, error) {
			if q, ok := topology.DeferredQueue(m.key); ok {
				// A fact one consumer deferred whose work queue was gone
				// when it fell due (the unroutable lane): back to that
				// queue alone, as its deferral meant, never to the others.
				return "", q, nil
			}
			if m.RoutingKey == "" {
				return "", "", errors.New("its original routing key is unknown, so it cannot go through the exchange")
			}
			return o.Exchange, m.RoutingKey, nil
		}
	}
	now := time.Now()
	return move(ctx, s, pub, c, f, target, func(d amqp.Delivery, m Message) amqp.Publishing {
		p := replayCopy(d, m, now)
		for _, k := range []string{HeaderDiscardReason, HeaderDiscardedAt, HeaderDiscardedBy, HeaderDiscardGroup, HeaderDiscardBatch, HeaderDiscarded} {
			delete(p.Headers, k)
		}
		return p
	}, nil)
}
