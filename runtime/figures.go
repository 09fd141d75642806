package runtime

import (
	"context"
	"fmt"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/topology"
)

// Figures are the four numbers to put on a dashboard for one consumer.
type Figures struct {
	Consumer string
	// WorkDepth is the number of messages ready in the work queue (an
	// ordered consumer's shards together). One that climbs and does not
	// come down is the earliest honest signal.
	WorkDepth int
	// PoisonDepth is the number of messages in the poison queue; alert on
	// anything above zero.
	PoisonDepth int
	// Consumers is the number of consumers attached to the work queue, in
	// every process (summed over an ordered consumer's shards, standing-by
	// consumers included). Zero with depth is a deploy that half-happened.
	Consumers int
	// RedeliveryRate is Redelivered/Delivered as counted by this process (0
	// before anything was delivered). A rise usually means a dependency is
	// wobbling or consumers are crashing.
	RedeliveryRate float64
	// StreamLag, for a stream consumer, is how many offsets lie after the
	// offset stored under its name up to its stream's tail: the facts not
	// settled yet, and the stream's own offset-tracking records among
	// them. Nil when not known: not a stream consumer, nothing stored yet
	// while the stream holds facts, or an offset store that cannot read
	// the tail (not a [TailReader]). For a consumer of a super stream,
	// which keeps an offset per partition, the sum of PartitionLags, nil
	// when one of them is.
	StreamLag *int64
	// PartitionLags, for a consumer of a super stream, are the lags of
	// its partitions, in the order of topology.Consumer.Partitions, each
	// nil when not known; nil for other consumers.
	PartitionLags []*int64
	Counts        Counts // everything this process counted for the consumer
}

// Figures reads the dashboard figures of consumer c: queue depths and the
// consumer count from the broker (by passive declare, so no management
// plugin is needed), the redelivery rate from this process's counters.
func (c *Conn) Figures(ctx context.Context, consumer topology.Consumer) (Figures, error) {
	f := Figures{Consumer: consumer.Name, Counts: c.Counts(consumer.Name)}
	if d := f.Counts[Delivered]; d > 0 {
		f.RedeliveryRate = float64(f.Counts[Redelivered]) / float64(d)
	}
	// An ordered consumer's work queues are its shards: summed.
	work := []string{consumer.Queue}
	if consumer.Ordered() {
		work = consumer.Shards
	}
	for _, name := range work {
		q, err := amqpmsg.InspectQueue(ctx, c, name)
		if err != nil {
			return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
		}
		f.WorkDepth += q.Messages
		f.Consumers += q.Consumers
	}
	poison, err := amqpmsg.InspectQueue(ctx, c, consumer.PoisonQueue)
	if err != nil {
		return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
	}
	f.PoisonDepth = poison.Messages
	switch {
	case len(consumer.Partitions) > 0:
		// The super stream itself is an exchange: its offsets and tails
		// are its partitions'.
		var sum int64
		known := true
		for _, p := range consumer.Partitions {
			lag, err := c.streamLag(ctx, consumer, p)
			if err != nil {
				return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
			}
			f.PartitionLags = append(f.PartitionLags, lag)
			if lag == nil {
				known = false
			} else {
				sum += *lag
			}
		}
		if known {
			f.StreamLag = &sum
		}
	case consumer.Stream != "":
		if f.StreamLag, err = c.streamLag(ctx, consumer, consumer.Stream); err != nil {
			return f, fmt.Errorf("figures of %q: %w", consumer.Name, err)
		}
	}
	return f, nil
}

// streamLag reads a stream consumer's lag behind the tail of stream, its
// stream or a partition of its super stream; nil when it is not known.
func (c *Conn) streamLag(ctx context.Context, consumer topology.Consumer, stream string) (*int64, error) {
	store, err := c.offsets(ctx, fmt.Sprintf("stream consumer %q", consumer.Name))
	if err != nil {
		return nil, err
	}
	tr, ok := store.(TailReader)
	if !ok {
		return nil, nil
	}
	tail, hasTail, err := tr.Tail(ctx, stream)
	if err != nil {
		c.dropOffsets(store)
		return nil, fmt.Errorf("the tail of stream %q: %w", stream, err)
	}
	stored, hasStored, err := store.QueryOffset(ctx, consumer.Name, stream)
	if err != nil {
		c.dropOffsets(store)
		return nil, fmt.Errorf("the offset of stream %q: %w", stream, err)
	}
	var lag int64
	switch {
	case !hasTail:
	case !hasStored:
		return nil, nil
	default:
		lag = max(tail-stored, 0)
	}
	return &lag, nil
}
